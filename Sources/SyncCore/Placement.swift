import SyncProtocol

extension Placement {
    /// Where the moved record goes in `ids`, the other records in order (an anchor that is not
    /// among them counts as the start for `before`, the end for `after`).
    public func index(among ids: [String]) -> Int {
        switch self {
        case .first: 0
        case .last: ids.count
        case .before(let anchor): ids.recordIDs.firstIndex(of: RecordID(anchor)) ?? 0
        case .after(let anchor): (ids.recordIDs.firstIndex(of: RecordID(anchor)) ?? ids.count - 1) + 1
        }
    }
}

/// What a MOVE asks of a store about the live records of one collection, the moved record left
/// out, so each store answers in its own query language and the placement rules live here once.
public protocol NeighbourLookup {
    associatedtype Failure: Error
    func firstKey() throws(Failure) -> String?
    func lastKey() throws(Failure) -> String?
    /// The greatest key below `key`.
    func key(below key: String) throws(Failure) -> String?
    /// The least key above `key`.
    func key(above key: String) throws(Failure) -> String?
    /// The key of the live record `id`; nil when there is none.
    func key(of id: String) throws(Failure) -> String?
    /// Up to `limit` live records at or below `key`, nearest first (position, then id, descending).
    func records(atOrBelow key: String, limit: Int) throws(Failure) -> [RecordState]
    /// Up to `limit` live records at or above `key`, nearest first (position, then id, ascending).
    func records(atOrAbove key: String, limit: Int) throws(Failure) -> [RecordState]
}

extension Placement {
    /// Between which keys a record moved here goes (nil: the start or the end).
    public enum Bounds: Equatable {
        case between(lower: String?, upper: String?)
        /// The anchor is the record itself, or not a live record.
        case refused(ProtocolError)
    }

    /// The keys the record `id` of `collection` goes between, asked of `lookup`.
    public func bounds<Lookup: NeighbourLookup>(moving id: String, of collection: String, in lookup: Lookup) throws(Lookup.Failure) -> Bounds {
        switch self {
        case .first:
            return .between(lower: nil, upper: try lookup.firstKey())
        case .last:
            return .between(lower: try lookup.lastKey(), upper: nil)
        case .before(let anchor), .after(let anchor):
            // Ids are compared by their bytes: twins in two normalisations are two records.
            guard RecordID(anchor) != RecordID(id) else { return .refused(ProtocolError(.badRequest, "cannot move a record relative to itself")) }
            guard let anchorKey = try lookup.key(of: anchor) else {
                return .refused(ProtocolError(.notFound, "no record \(ValueJSON.quoted(anchor)) in \(collection)"))
            }
            if case .before = self { return .between(lower: try lookup.key(below: anchorKey), upper: anchorKey) }
            return .between(lower: anchorKey, upper: try lookup.key(above: anchorKey))
        }
    }
}

/// What a MOVE comes to, decided from the record's state and its new neighbours.
public enum MovePlan: Equatable {
    /// The base revision is stale (or there is no live record).
    case conflict
    case refused(ProtocolError)
    /// The record's new state, at its new key.
    case place(RecordState)
    /// No short key is left between the neighbours `lower` and `upper`: re-key a few records
    /// around the gap (`respaced`; `fieldsJSON`: the moved record's fields).
    case rebalance(fieldsJSON: String, lower: String?, upper: String?)
}

extension Placement {
    /// Plans moving the record `id` (now `current`) of `collection` here, asking `lookup`.
    public func plan<Lookup: NeighbourLookup>(
        moving id: String, of collection: String, baseRev: Int64, over current: RecordState?, in lookup: Lookup
    ) throws(Lookup.Failure) -> MovePlan {
        guard let current, let (rev, fieldsJSON) = RevisionRules.move(baseRev: baseRev, over: current) else { return .conflict }
        switch try bounds(moving: id, of: collection, in: lookup) {
        case .refused(let error):
            return .refused(error)
        case .between(let lower, let upper):
            guard let position = try? PositionKey.between(lower, upper), position.utf8.count <= PositionKey.maxLength else {
                return .rebalance(fieldsJSON: fieldsJSON, lower: lower, upper: upper)
            }
            return .place(RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)))
        }
    }
}
