import SQLiteKit
import SyncCore
import SyncProtocol

/// Reads of the change log: a collection's activity (LOG), one record's history (VERSIONS),
/// and states as they were at a seq (LIST AT, REVERT). A record's changes are a chain from its
/// row in `records` back through each change's `prev_seq`.
extension RecordReader {
    private static let logged = """
        SELECT c.seq, c.id, c.rev, c.position, c.fields, a.user, a.device, a.label, a.via, c.at, c.prev_seq
        FROM changes c JOIN authors a ON a.id = c.author
        """

    /// A row of `logged`, and the seq of the record's change before it.
    private static func decodeLogged(_ row: Row, _ collection: String) -> (change: LoggedChange, previous: Int64?) {
        let author = LoggedAuthor(user: row.text(5) ?? "-", device: row.text(6) ?? "-", deviceLabel: row.text(7), via: row.text(8) ?? "-")
        let state = decodeState(row, id: 1, rev: 2, position: 3, fields: 4)
        return (LoggedChange(collection: collection, seq: row.integer(0), state: state, author: author, at: row.integer(9)),
                row.isNull(10) ? nil : row.integer(10))
    }

    public func log(_ collection: String, _ query: LogQuery) throws(StoreError) -> [LoggedChange] {
        let (user, device): (SQLValue, SQLValue) = switch query.author {
        case nil: (.null, .null)
        case .user(let name): (.text(name), .null)
        case .device(let id): (.null, .text(id))
        }
        let filter = "c.collection = ?1 AND (?2 IS NULL OR a.user = ?2) AND (?3 IS NULL OR a.device = ?3)"
        let limit = SQLValue.integer(Int64(query.limit))
        let decode = { (row: Row) in Self.decodeLogged(row, collection).change }
        guard let since = query.since else {
            let newestFirst = try db.query("\(Self.logged) WHERE \(filter) ORDER BY c.seq DESC LIMIT ?4", .text(collection), user, device, limit, row: decode)
            return newestFirst.reversed()
        }
        return try db.query("\(Self.logged) WHERE \(filter) AND c.seq > ?5 ORDER BY c.seq LIMIT ?4",
                            .text(collection), user, device, limit, .integer(since), row: decode)
    }

    /// The record's changes the log keeps, newest first, at most `limit`, and whether the walk
    /// reached the record's first kept change.
    private func chain(_ collection: String, _ id: String, limit: Int, _ view: PendingRecords.ReadView) throws(StoreError) -> (changes: [LoggedChange], complete: Bool) {
        var next = try latestSeq(collection, id, view)
        var changes: [LoggedChange] = []
        while let seq = next, changes.count < limit {
            guard let (change, previous) = try db.queryFirst("\(Self.logged) WHERE c.seq = ?", .integer(seq), row: { Self.decodeLogged($0, collection) })
            else { return (changes, true) }
            changes.append(change)
            next = previous
        }
        return (changes, next == nil)
    }

    /// The record's earlier versions, newest first: from its logged changes, then the versions
    /// kept before the log.
    public func versions(_ collection: String, _ id: String, limit: Int) throws(StoreError) -> [RecordVersion] {
        let view = pending.beginRead()
        defer { view.end() }
        return try db.transaction { () throws(StoreError) in
            // A MOVE is a change without a version: walk a few more than asked.
            let (changes, complete) = try chain(collection, id, limit: limit * 4 + 1, view)
            var versions = Array(RecordVersion.fromLog(changes.reversed()).prefix(limit))
            guard complete, versions.count < limit else { return versions }
            let oldest = changes.last?.state.rev ?? Int64.max
            versions += try db.query(
                "SELECT rev, fields, replaced_at FROM record_versions WHERE collection = ? AND id = ? AND rev < ? ORDER BY rev DESC LIMIT ?",
                .text(collection), .text(id), .integer(oldest), .integer(Int64(limit - versions.count))) { row in
                RecordVersion(rev: row.integer(0), fieldsJSON: row.text(1) ?? "{}", replacedAt: row.integer(2))
            }
            return versions
        }
    }

    /// Where a record stood once `seq` was committed: walks its chain back from `current`
    /// (its row's seq) to the first change at or before `seq`. `.absent` when it was created
    /// after `seq`; nil when the change it needs is no longer kept.
    private func state(_ collection: String, from current: Int64, at seq: Int64) throws(StoreError) -> LoggedState? {
        var next: Int64? = current
        while let at = next {
            guard let (change, previous) = try db.queryFirst("\(Self.logged) WHERE c.seq = ?", .integer(at), row: { Self.decodeLogged($0, collection) })
            else { return nil }
            if change.seq <= seq { return .state(change.state) }
            next = previous
        }
        return .absent
    }

    private enum LoggedState {
        case state(RecordState)
        case absent
    }

    /// Whether the log can rebuild the store as it stood at `seq`.
    private func reaches(_ seq: Int64) throws(StoreError) -> Bool {
        let from = try db.queryFirst("SELECT value FROM meta WHERE key = 'log_from'") { $0.integer(0) } ?? 0
        return LogReach.covers(seq, completeFrom: from, current: try currentSeq())
    }

    /// The live records in order as they stood at `seq`, read in one transaction; nil when a
    /// change it needs is no longer kept.
    public func list(_ collection: String, at seq: Int64) throws(StoreError) -> [RecordState]? {
        let view = pending.beginRead()
        defer { view.end() }
        let waiting = view.entries(of: collection)
        return try db.transaction { () throws(StoreError) -> [RecordState]? in
            guard try reaches(seq) else { return nil }
            let rows = try db.query("SELECT id, rev, position, fields, seq FROM records WHERE collection = ?", .text(collection)) { row in
                let id = row.text(0) ?? ""
                if let edit = waiting[RecordID(id)], edit.seq > row.integer(4) { return (state: edit.state(id: id), seq: edit.seq) }
                return (state: Self.decodeState(row, id: 0, rev: 1, position: 2, fields: 3), seq: row.integer(4))
            }
            var live: [RecordState] = []
            for row in rows {
                if row.seq <= seq {
                    if row.state.position != nil { live.append(row.state) }
                    continue
                }
                switch try state(collection, from: row.seq, at: seq) {
                case nil: return nil
                case .absent: continue
                case .state(let state): if state.position != nil { live.append(state) }
                }
            }
            return live.sorted(by: RecordState.inListOrder)
        }
    }

    public func states(_ collection: String, _ ids: [String], at seq: Int64) throws(StoreError) -> [String: RecordState]? {
        let view = pending.beginRead()
        defer { view.end() }
        return try db.transaction { () throws(StoreError) -> [String: RecordState]? in
            guard try reaches(seq) else { return nil }
            var states: [String: RecordState] = [:]
            for id in ids {
                guard let current = try latestSeq(collection, id, view) else { continue }
                switch try state(collection, from: current, at: seq) {
                case nil: return nil
                case .absent: continue
                case .state(let state): states[id] = state
                }
            }
            return states
        }
    }
}
