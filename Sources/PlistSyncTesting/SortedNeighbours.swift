import SyncCore
import SyncProtocol

/// The live records of one collection in order, answering a MOVE's questions as a store would
/// (`NeighbourLookup`), the moving record left out: the memory store's and the placement
/// tests' stand-in for a store's queries. Keys and ids compare by their bytes.
public struct SortedNeighbours: NeighbourLookup {
    public typealias Failure = Never
    /// The live records other than the one moving, in order.
    public let live: [RecordState]

    public init(_ records: [RecordState], moving: String = "") {
        live = records.filter { $0.position != nil && RecordID($0.id) != RecordID(moving) }.sorted { left, right in
            let (leftKey, rightKey) = (left.position!, right.position!)
            if leftKey != rightKey { return leftKey.utf8.lexicographicallyPrecedes(rightKey.utf8) }
            return RecordID(left.id) < RecordID(right.id)
        }
    }

    /// Records `id` at `key`, each live with empty fields.
    public init(keys: [(id: String, key: String)], moving: String = "") {
        self.init(keys.map { RecordState(id: $0.id, rev: 1, body: .live(position: $0.key, fieldsJSON: "{}")) }, moving: moving)
    }

    public func firstKey() -> String? { live.first?.position }
    public func lastKey() -> String? { live.last?.position }
    public func key(below key: String) -> String? { live.last { Self.precedes($0.position!, key) }?.position }
    public func key(above key: String) -> String? { live.first { Self.precedes(key, $0.position!) }?.position }
    public func key(of id: String) -> String? { live.first { RecordID($0.id) == RecordID(id) }?.position }

    public func records(atOrBelow key: String, limit: Int) -> [RecordState] {
        Array(live.filter { !Self.precedes(key, $0.position!) }.reversed().prefix(limit))
    }

    public func records(atOrAbove key: String, limit: Int) -> [RecordState] {
        Array(live.filter { !Self.precedes($0.position!, key) }.prefix(limit))
    }

    private static func precedes(_ left: String, _ right: String) -> Bool {
        left.utf8.lexicographicallyPrecedes(right.utf8)
    }
}
