import PostgresKit
import SyncCore
import SyncProtocol

/// Reads of the change log in PostgreSQL (the same contract as the SQLite store's): a
/// collection's activity, one record's history, and states as they were at a seq. Several
/// statements are read in one repeatable-read transaction, so they see one snapshot.
extension PostgresServerStore {
    private static let logged = """
        SELECT seq, id, rev, position, fields, coalesce(author_user, '-'), coalesce(author_device, '-'), author_label,
            coalesce(via, '-'), committed_at, prev_seq FROM change_log
        """

    private static func decodeLogged(_ rows: PGRows, _ index: Int, _ collection: String) -> LoggedChange {
        let author = LoggedAuthor(user: rows[index, 5] ?? "-", device: rows[index, 6] ?? "-", deviceLabel: rows[index, 7], via: rows[index, 8] ?? "-")
        return LoggedChange(collection: collection, seq: rows.integer(index, 0), state: rows.recordState(index, id: 1, rev: 2, position: 3, fields: 4),
                            author: author, at: rows.integer(index, 9))
    }

    public func log(_ collection: String, _ query: LogQuery) throws(StoreFailure) -> [LoggedChange] {
        var user: String?
        var device: String?
        switch query.author {
        case nil: break
        case .user(let name): user = name
        case .device(let id): device = id
        }
        let filter = "collection = $1 AND ($2::text IS NULL OR author_user = $2) AND ($3::text IS NULL OR author_device = $3)"
        return try read { connection throws(PGError) in
            if let since = query.since {
                let rows = try connection.query("\(Self.logged) WHERE \(filter) AND seq > $5 ORDER BY seq LIMIT $4",
                                                [collection, user, device, String(query.limit), String(since)])
                return (0..<rows.count).map { Self.decodeLogged(rows, $0, collection) }
            }
            let rows = try connection.query("\(Self.logged) WHERE \(filter) ORDER BY seq DESC LIMIT $4", [collection, user, device, String(query.limit)])
            return (0..<rows.count).map { Self.decodeLogged(rows, $0, collection) }.reversed()
        }
    }

    public func versions(_ collection: String, _ id: String, limit: Int) throws(StoreFailure) -> [RecordVersion] {
        try snapshot { connection throws(PGError) in
            // A MOVE is a change without a version: read a few more than asked.
            let rows = try connection.query("\(Self.logged) WHERE collection = $1 AND id = $2 ORDER BY seq DESC LIMIT $3",
                                            [collection, id, String(limit * 4 + 1)])
            let changes = (0..<rows.count).map { Self.decodeLogged(rows, $0, collection) }
            var versions = Array(RecordVersion.fromLog(changes.reversed()).prefix(limit))
            guard versions.count < limit, rows.count <= limit * 4 else { return versions }
            let older = try connection.query(
                "SELECT rev, fields, replaced_at FROM record_versions WHERE collection = $1 AND id = $2 AND rev < $3 ORDER BY rev DESC LIMIT $4",
                [collection, id, String(changes.last?.state.rev ?? Int64.max), String(limit - versions.count)])
            versions += (0..<older.count).map { index in
                RecordVersion(rev: older.integer(index, 0), fieldsJSON: older[index, 1] ?? "{}", replacedAt: older.integer(index, 2))
            }
            return versions
        }
    }

    public func list(_ collection: String, at seq: Int64) throws(StoreFailure) -> [RecordState]? {
        try snapshot { connection throws(PGError) -> [RecordState]? in
            guard try Self.reaches(seq, on: connection) else { return nil }
            let rows = try connection.query("SELECT id, rev, position, fields, seq FROM records WHERE collection = $1", [collection])
            return try Self.states(of: rows, collection, at: seq, on: connection)?.values.filter { $0.position != nil }.sorted(by: RecordState.inListOrder)
        }
    }

    public func states(_ collection: String, _ ids: [String], at seq: Int64) throws(StoreFailure) -> [String: RecordState]? {
        try snapshot { connection throws(PGError) -> [String: RecordState]? in
            guard try Self.reaches(seq, on: connection) else { return nil }
            let rows = try connection.query("SELECT id, rev, position, fields, seq FROM records WHERE collection = $1 AND id = ANY($2::text[])",
                                            [collection, PGArrayLiteral.text(ids)])
            return try Self.states(of: rows, collection, at: seq, on: connection)
        }
    }

    /// Where the records of `rows` (id, rev, position, fields, seq) stood at `seq`: as they are
    /// when not changed since, else as the log says.
    private static func states(of rows: PGRows, _ collection: String, at seq: Int64, on connection: PGConnection) throws(PGError) -> [String: RecordState]? {
        var states: [String: RecordState] = [:]
        var changedSince: [String] = []
        for index in 0..<rows.count {
            let state = rows.recordState(index, id: 0, rev: 1, position: 2, fields: 3)
            if rows.integer(index, 4) <= seq { states[state.id] = state } else { changedSince.append(state.id) }
        }
        guard let earlier = try Self.states(collection, changedSince, at: seq, on: connection) else { return nil }
        return states.merging(earlier) { _, earlier in earlier }
    }

    /// The states at `seq` of records changed after it: the change before each one's first
    /// change after `seq` (none: it did not exist yet); nil when one of those is gone.
    private static func states(_ collection: String, _ ids: [String], at seq: Int64, on connection: PGConnection) throws(PGError) -> [String: RecordState]? {
        guard !ids.isEmpty else { return [:] }
        let firsts = try connection.query(
            """
            SELECT DISTINCT ON (id) id, prev_seq FROM change_log WHERE collection = $1 AND id = ANY($2::text[]) AND seq > $3 ORDER BY id, seq
            """, [collection, PGArrayLiteral.text(ids), String(seq)])
        let wanted = (0..<firsts.count).compactMap { firsts[$0, 1] == nil ? nil : firsts.integer($0, 1) }
        guard !wanted.isEmpty else { return [:] }
        let found = try connection.query("\(logged) WHERE seq = ANY($1::bigint[])", [PGArrayLiteral.integers(wanted)])
        guard found.count == wanted.count else { return nil }
        var states: [String: RecordState] = [:]
        for index in 0..<found.count where found.integer(index, 0) <= seq {
            let change = decodeLogged(found, index, collection)
            states[change.state.id] = change.state
        }
        return states
    }

    /// Runs `body` in one repeatable-read snapshot.
    private func snapshot<T>(_ body: (PGConnection) throws(PGError) -> T) throws(StoreFailure) -> T {
        try read { connection throws(PGError) -> T in
            try connection.script("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do throws(PGError) {
                let result = try body(connection)
                try connection.script("COMMIT")
                return result
            } catch {
                if !connection.isBroken { _ = try? connection.script("ROLLBACK") }
                throw error
            }
        }
    }

    /// Whether the log can rebuild the store as it stood at `seq`.
    private static func reaches(_ seq: Int64, on connection: PGConnection) throws(PGError) -> Bool {
        let rows = try connection.query("SELECT (SELECT value FROM meta WHERE key = 'log_from'), (SELECT value FROM meta WHERE key = 'seq')")
        return LogReach.covers(seq, completeFrom: rows.integer(0, 0), current: rows.integer(0, 1))
    }
}
