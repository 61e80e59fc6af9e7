import Foundation
import PostgresKit
import SyncCore
import SyncProtocol

/// Applies batches of writes in one PostgreSQL transaction each: the group commit, shared by
/// every node. The first statement locks the `seq` row, so batches of all nodes commit one at
/// a time and seq order is commit order, without gaps (a batch that fails takes its seqs back).
///
/// Record states are read for the whole batch in one query and the revision rules decided here
/// (`RevisionRules`); the new rows go back in one statement, so a batch costs a handful of round
/// trips whatever its size. Runs on the commit thread, one batch at a time.
final class PostgresWriter {
    let connection: PGConnection
    private let node: String
    /// States read or written in this batch; a missing key has not been looked at yet.
    private var known: [RecordKey: RecordState?] = [:]
    /// The seq of each known state (nil for one that never existed): a logged change names
    /// the change before it.
    private var seqs: [RecordKey: Int64] = [:]
    /// The position key last handed out at the end of each collection in this batch.
    private var endPositions: [String: String] = [:]
    private var pendingRecords: [RecordKey: (seq: Int64, state: RecordState)] = [:]
    private var pendingLog: [(change: Change, previousSeq: Int64?, author: ChangeAuthor)] = []
    private var seq: Int64 = 0
    /// The batch's time (seconds since 1970), written as each row's `updated_at`.
    private var timestamp: Int64 = 0

    init(connection: PGConnection, node: String) {
        self.connection = connection
        self.node = node
    }

    /// Applies `operations` in order and commits; one outcome each. When this throws, nothing
    /// of the batch was committed — except when the connection was lost after COMMIT went out
    /// (then it may have been). A connection found lost before COMMIT is made again and the
    /// batch run once more: PostgreSQL rolled back whatever of it had reached the server.
    func commit(_ operations: [StoreOperation], now: Date = Date()) throws(PGError) -> [StoreOutcome] {
        if connection.isBroken { try connection.reconnect() }
        var committing = false
        do {
            return try attempt(operations, now: now, committing: &committing)
        } catch where error.connectionLost && !committing {
            try connection.reconnect()
            return try attempt(operations, now: now, committing: &committing)
        }
    }

    private func attempt(_ operations: [StoreOperation], now: Date, committing: inout Bool) throws(PGError) -> [StoreOutcome] {
        timestamp = Int64(now.timeIntervalSince1970)
        known = [:]
        seqs = [:]
        endPositions = [:]
        pendingRecords = [:]
        pendingLog = []
        do throws(PGError) {
            let locked = try connection.script("BEGIN; SELECT value FROM meta WHERE key = 'seq' FOR UPDATE")
            let startSeq = Int64(locked[0, 0] ?? "") ?? 0
            seq = startSeq
            try prefetch(operations)
            var outcomes: [StoreOutcome] = []
            outcomes.reserveCapacity(operations.count)
            var events: [String] = []
            for operation in operations {
                let outcome = try apply(operation)
                if outcome == .done, let event = ClusterEvent.after(operation, node: node) { events.append(event.payload) }
                outcomes.append(outcome)
            }
            try flush()
            if seq != startSeq { events.append(ClusterEvent(node: node, .committed(throughSeq: seq)).payload) }
            try connection.query(
                "WITH counter AS (UPDATE meta SET value = $1 WHERE key = 'seq') SELECT pg_notify('plistsync', p) FROM unnest($2::text[]) AS p",
                [String(seq), PGArrayLiteral.text(events)])
            committing = true
            try connection.script("COMMIT")
            return outcomes
        } catch {
            if !connection.isBroken { _ = try? connection.script("ROLLBACK") }
            throw error
        }
    }

    /// Reads, in one query, the state of every record the batch's PUTs and DELs name.
    private func prefetch(_ operations: [StoreOperation]) throws(PGError) {
        var collections: [String?] = []
        var ids: [String?] = []
        for operation in operations {
            switch operation {
            case .put(let collection, let id, _, _, _), .delete(let collection, let id, _, _), .restore(let collection, let id, _, _, _):
                let key = RecordKey(collection: collection, id: id)
                guard known[key] == nil else { continue }
                known[key] = .some(nil)
                collections.append(collection)
                ids.append(id)
            default:
                continue
            }
        }
        guard !ids.isEmpty else { return }
        let rows = try connection.query(
            """
            SELECT r.collection, r.id, r.rev, r.position, r.fields, r.seq FROM records r
            JOIN unnest($1::text[], $2::text[]) AS k(collection, id) ON r.collection = k.collection AND r.id = k.id
            """, [PGArrayLiteral.text(collections), PGArrayLiteral.text(ids)])
        for index in 0..<rows.count {
            let key = RecordKey(collection: rows[index, 0] ?? "", id: rows[index, 1] ?? "")
            known[key] = .some(rows.recordState(index, id: 1, rev: 2, position: 3, fields: 4))
            seqs[key] = rows.integer(index, 5)
        }
    }

    private func apply(_ operation: StoreOperation) throws(PGError) -> StoreOutcome {
        switch operation {
        case .put(let collection, let id, let baseRev, let fieldsJSON, let author):
            let current = try state(collection, id)
            switch RevisionRules.put(baseRev: baseRev, over: current) {
            case .update(let rev, let position):
                return record(collection, RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), replacing: current, by: author)
            case .create(let rev):
                let position = try key(between: try endPosition(collection), nil)
                endPositions[collection] = position
                return record(collection, RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), replacing: current, by: author)
            case .conflict:
                return .conflict(collection: collection, id: id, current: current)
            }
        case .delete(let collection, let id, let baseRev, let author):
            let current = try state(collection, id)
            guard let rev = RevisionRules.delete(baseRev: baseRev, over: current) else {
                return .conflict(collection: collection, id: id, current: current)
            }
            return record(collection, RecordState(id: id, rev: rev, body: .deleted), replacing: current, by: author)
        case .restore(let collection, let id, let baseRev, let target, let author):
            let current = try state(collection, id)
            guard let rev = RevisionRules.restore(baseRev: baseRev, replacing: current?.head) else {
                return .conflict(collection: collection, id: id, current: current)
            }
            // A restored place may be past the end handed out so far.
            endPositions[collection] = nil
            return record(collection, RecordState(id: id, rev: rev, body: target?.body ?? .deleted), replacing: current, by: author)
        case .move(let collection, let id, let baseRev, let placement, let author):
            // Neighbours are read from the table: what this batch wrote goes there first.
            try flush()
            return try move(collection, id, baseRev, placement, by: author)
        default:
            try flush()
            known = [:]
            endPositions = [:]
            return try applyAdministrative(operation)
        }
    }

    private func applyAdministrative(_ operation: StoreOperation) throws(PGError) -> StoreOutcome {
        let now = String(timestamp)
        switch operation {
        case .createCollection(let name, let owner):
            let made = try connection.query(
                "INSERT INTO collections (name, owner, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [name, owner, now])
            guard made.affected == 1 else { return .refused(ProtocolError(.exists, "collection \(name) exists")) }
            try connection.query("INSERT INTO members (collection, user_name, role) VALUES ($1, $2, $3)", [name, owner, String(Role.admin.rawValue)])
            return .done
        case .dropCollection(let name):
            let removed = try connection.query("DELETE FROM collections WHERE name = $1", [name])
            guard removed.affected > 0 else { return .refused(ProtocolError(.notFound, "no collection \(name)")) }
            try connection.query("DELETE FROM invitations WHERE collection = $1", [name])
            try connection.query("DELETE FROM records WHERE collection IN ($1, $2)", [name, Names.conflictsCollection(of: name)])
            try connection.query("DELETE FROM record_versions WHERE collection IN ($1, $2)", [name, Names.conflictsCollection(of: name)])
            try connection.query("DELETE FROM change_log WHERE collection IN ($1, $2)", [name, Names.conflictsCollection(of: name)])
            return .done
        case .renameCollection(let from, let to):
            let taken = try connection.query("SELECT 1 FROM collections WHERE name = $1", [to])
            if taken.count > 0 { return .refused(ProtocolError(.exists, "collection \(to) exists")) }
            let renamed = try connection.query("UPDATE collections SET name = $2 WHERE name = $1", [from, to])
            guard renamed.affected > 0 else { return .refused(ProtocolError(.notFound, "no collection \(from)")) }
            try connection.query("UPDATE invitations SET collection = $2 WHERE collection = $1", [from, to])
            try connection.query("UPDATE records SET collection = $2 WHERE collection = $1", [from, to])
            try connection.query("UPDATE records SET collection = $2 WHERE collection = $1",
                                 [Names.conflictsCollection(of: from), Names.conflictsCollection(of: to)])
            try connection.query("UPDATE record_versions SET collection = $2 WHERE collection = $1", [from, to])
            try connection.query("UPDATE change_log SET collection = $2 WHERE collection = $1", [from, to])
            try connection.query("UPDATE change_log SET collection = $2 WHERE collection = $1",
                                 [Names.conflictsCollection(of: from), Names.conflictsCollection(of: to)])
            return .done
        case .grant(let collection, let user, let role):
            let known = try connection.query("SELECT 1 FROM users WHERE name = $1", [user])
            guard known.count > 0 else { return .refused(ProtocolError(.notFound, "no user \(user)")) }
            if let role {
                try connection.query(
                    """
                    INSERT INTO members (collection, user_name, role) VALUES ($1, $2, $3)
                    ON CONFLICT (collection, user_name) DO UPDATE SET role = excluded.role
                    """, [collection, user, String(role.rawValue)])
            } else {
                try connection.query("DELETE FROM members WHERE collection = $1 AND user_name = $2", [collection, user])
            }
            return .done
        case .createToken(let hash, let user, let label, let endsWithBrowser):
            try connection.query("INSERT INTO tokens (hash, user_name, label, created_at, browser_session) VALUES ($1, $2, $3, $4, $5)",
                                 [hash, user, label, now, endsWithBrowser ? "t" : "f"])
            return .done
        case .createInvitation, .revokeInvitation, .redeemInvitation, .addUser, .setPassword, .removeUser, .setServerAdmin:
            return try applyAccountChange(operation, now: now)
        case .revokeToken(let hash, let user):
            let removed = if let user {
                try connection.query("DELETE FROM tokens WHERE hash = $1 AND user_name = $2", [hash, user])
            } else {
                try connection.query("DELETE FROM tokens WHERE hash = $1", [hash])
            }
            return removed.affected > 0 ? .done : .refused(ProtocolError(.notFound, "no such token"))
        case .touchToken(let hash, let time):
            try connection.query("UPDATE tokens SET last_used_at = $2 WHERE hash = $1", [hash, String(time)])
            return .done
        case .purgeTombstones(let cutoff, let history):
            try connection.query(
                """
                WITH gone AS (DELETE FROM records WHERE fields IS NULL AND updated_at < $1 RETURNING collection, id, seq),
                    history AS (DELETE FROM change_log l USING gone WHERE l.collection = gone.collection AND l.id = gone.id),
                    newest AS (SELECT coalesce(max(seq), 0) AS seq FROM gone),
                    purged AS (UPDATE meta SET value = greatest(value::bigint, (SELECT seq FROM newest))::text WHERE key = 'purged_seq')
                UPDATE meta SET value = greatest(value::bigint, (SELECT seq FROM newest))::text WHERE key = 'log_from'
                """, [String(cutoff)])
            // Other nodes read the last hour of the log whatever the history kept.
            let logCutoff = min(history.cutoff, timestamp - PostgresServerStore.changeLogSeconds)
            try connection.query(
                """
                DELETE FROM change_log l WHERE committed_at < $1
                    AND NOT EXISTS (SELECT 1 FROM records r WHERE r.collection = l.collection AND r.id = l.id AND r.seq = l.seq)
                """, [String(logCutoff)])
            try thinLog(history)
            try connection.query("DELETE FROM record_versions WHERE replaced_at < $1", [String(history.cutoff)])
            try connection.query("DELETE FROM invitations WHERE expires_at < $1 OR (uses >= uses_allowed AND created_at < $1)", [String(cutoff)])
            return .done
        case .put, .delete, .move, .restore:
            preconditionFailure("record operations are applied by apply(_:timestamp:)")
        }
    }

    /// Thins each tier of the log from where the last purge left it (`thinned_<bucket>` in
    /// meta), as the SQLite store does; never the last hour (other nodes read it).
    private func thinLog(_ history: HistoryRetention) throws(PGError) {
        for tier in history.tiers {
            let key = "thinned_\(tier.bucket)"
            let done = try connection.query("SELECT value FROM meta WHERE key = $1", [key])
            let from = max(done.count > 0 ? done.integer(0, 0) : tier.from, tier.from)
            let to = min(tier.to, timestamp - PostgresServerStore.changeLogSeconds)
            guard from < to else { continue }
            let rows = try connection.query(
                "SELECT seq, collection, id, committed_at, prev_seq FROM change_log WHERE committed_at >= $1 AND committed_at < $2 ORDER BY seq",
                [String(from), String(to)])
            let entries = (0..<rows.count).map { index in
                HistoryRetention.Entry(seq: rows.integer(index, 0), collection: rows[index, 1] ?? "", id: rows[index, 2] ?? "", at: rows.integer(index, 3),
                                       previous: rows[index, 4] == nil ? nil : rows.integer(index, 4))
            }
            let (drop, relink) = HistoryRetention.thin(entries, bucket: tier.bucket)
            if !drop.isEmpty { try connection.query("DELETE FROM change_log WHERE seq = ANY($1::bigint[])", [PGArrayLiteral.integers(drop)]) }
            if !relink.isEmpty {
                try connection.query(
                    "UPDATE change_log l SET prev_seq = t.p FROM unnest($1::bigint[], $2::bigint[]) AS t(s, p) WHERE l.seq = t.s",
                    [PGArrayLiteral.integers(relink.map(\.seq)), PGArrayLiteral.optionalIntegers(relink.map(\.previous))])
                try connection.query("UPDATE meta SET value = greatest(value::bigint, $1)::text WHERE key = 'log_from'", [String(relink.map(\.seq).max()!)])
            }
            try connection.query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, String(to)])
        }
    }

    private func move(_ collection: String, _ id: String, _ baseRev: Int64, _ placement: Placement, by author: ChangeAuthor) throws(PGError) -> StoreOutcome {
        let current = try state(collection, id)
        switch try placement.plan(moving: id, of: collection, baseRev: baseRev, over: current, in: Neighbours(writer: self, collection: collection, moving: id)) {
        case .conflict:
            return .conflict(collection: collection, id: id, current: current)
        case .refused(let error):
            return .refused(error)
        case .rebalance(let fieldsJSON, let lower, let upper):
            let neighbours = Neighbours(writer: self, collection: collection, moving: id)
            let states = try LocalRekey.states(moving: id, baseRev: baseRev, fieldsJSON: fieldsJSON, between: lower, upper, in: neighbours)
            endPositions[collection] = nil
            return .rebalanced(writing: states) { state in record(collection, state, replacing: state, by: author) }
        case .place(let state):
            endPositions[collection] = nil
            return record(collection, state, replacing: current, by: author)
        }
    }

    /// A MOVE's questions about the other live records, in PostgreSQL (after a flush, so the
    /// table has this batch's writes).
    private struct Neighbours: NeighbourLookup {
        let writer: PostgresWriter
        let collection: String
        let moving: String

        private func key(_ condition: String, _ order: String, _ extra: String...) throws(PGError) -> String? {
            try writer.firstText("SELECT position FROM records WHERE collection = $1 AND fields IS NOT NULL AND id <> $2 \(condition) ORDER BY \(order) LIMIT 1",
                                 [collection, moving] + extra)
        }

        func firstKey() throws(PGError) -> String? { try key("", "position, id") }
        func lastKey() throws(PGError) -> String? { try key("", "position DESC, id DESC") }
        func key(below key: String) throws(PGError) -> String? { try self.key("AND position < $3", "position DESC", key) }
        func key(above key: String) throws(PGError) -> String? { try self.key("AND position > $3", "position", key) }
        func key(of id: String) throws(PGError) -> String? {
            guard let state = try writer.state(collection, id), case .live(let position, _) = state.body else { return nil }
            return position
        }

        func records(atOrBelow key: String, limit: Int) throws(PGError) -> [RecordState] {
            try records("position <= $3", "position DESC, id DESC", key, limit)
        }

        func records(atOrAbove key: String, limit: Int) throws(PGError) -> [RecordState] {
            try records("position >= $3", "position, id", key, limit)
        }

        private func records(_ condition: String, _ order: String, _ key: String, _ limit: Int) throws(PGError) -> [RecordState] {
            let rows = try writer.connection.query(
                "SELECT id, rev, position, fields FROM records WHERE collection = $1 AND fields IS NOT NULL AND id <> $2 AND \(condition) ORDER BY \(order) LIMIT $4",
                [collection, moving, key, String(limit)])
            return rows.map { row in
                RecordState(id: row.text(0) ?? "", rev: row.integer(1), body: .live(position: row.text(2) ?? "", fieldsJSON: row.text(3) ?? "{}"))
            }
        }
    }

    fileprivate func firstText(_ sql: String, _ parameters: [String?]) throws(PGError) -> String? {
        let rows = try connection.query(sql, parameters)
        return rows.count > 0 ? rows[0, 0] : nil
    }

    /// The last live position key of the collection, as of this batch.
    private func endPosition(_ collection: String) throws(PGError) -> String? {
        if let known = endPositions[collection] { return known }
        try flush()
        return try firstText(
            "SELECT position FROM records WHERE collection = $1 AND fields IS NOT NULL ORDER BY position DESC, id DESC LIMIT 1", [collection])
    }

    private func key(between lower: String?, _ upper: String?) throws(PGError) -> String {
        do {
            return try PositionKey.between(lower, upper)
        } catch {
            throw PGError(sqlState: nil, message: "position keys exhausted between \(lower ?? "start") and \(upper ?? "end")")
        }
    }

    fileprivate func state(_ collection: String, _ id: String) throws(PGError) -> RecordState? {
        let key = RecordKey(collection: collection, id: id)
        if let known = known[key] { return known }
        let rows = try connection.query("SELECT id, rev, position, fields, seq FROM records WHERE collection = $1 AND id = $2", [collection, id])
        let found = rows.count > 0 ? rows.recordState(0, id: 0, rev: 1, position: 2, fields: 3) : nil
        known[key] = .some(found)
        if rows.count > 0 { seqs[key] = rows.integer(0, 4) }
        return found
    }

    /// Takes the next seq for a record's new state; written to the tables at the next flush.
    private func record(_ collection: String, _ state: RecordState, replacing previous: RecordState?, by author: ChangeAuthor) -> StoreOutcome {
        seq += 1
        let key = RecordKey(collection: collection, id: state.id)
        let previousSeq = seqs[key]
        known[key] = .some(state)
        seqs[key] = seq
        pendingRecords[key] = (seq, state)
        let change = Change(collection: collection, seq: seq, state: state, storedBytesDelta: state.storedFieldBytes - (previous?.storedFieldBytes ?? 0))
        pendingLog.append((change, previousSeq, author))
        return .changed(change)
    }

    /// Writes the records and change-log rows held so far, in one statement.
    private func flush() throws(PGError) {
        guard !pendingLog.isEmpty else { return }
        let latest = pendingRecords.sorted { $0.value.seq < $1.value.seq }
        let logged = pendingLog
        pendingRecords = [:]
        pendingLog = []
        func columns(_ states: [(collection: String, seq: Int64, state: RecordState)]) -> [String?] {
            [
                PGArrayLiteral.text(states.map(\.collection)),
                PGArrayLiteral.text(states.map(\.state.id)),
                PGArrayLiteral.integers(states.map(\.state.rev)),
                PGArrayLiteral.integers(states.map(\.seq)),
                PGArrayLiteral.text(states.map { if case .live(let position, _) = $0.state.body { position } else { nil } }),
                PGArrayLiteral.text(states.map { if case .live(_, let fields) = $0.state.body { fields } else { nil } }),
            ]
        }
        let recordColumns = columns(latest.map { entry in (entry.key.collection, entry.value.seq, entry.value.state) })
        let logColumns = columns(logged.map { ($0.change.collection, $0.change.seq, $0.change.state) })
        let authors = logged.map(\.author)
        try connection.query(
            """
            WITH latest AS (
                INSERT INTO records (collection, id, rev, seq, position, fields, updated_at)
                SELECT c, i, r, s, p, f, $13 FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[]) AS t(c, i, r, s, p, f)
                ON CONFLICT (collection, id) DO UPDATE SET rev = excluded.rev, seq = excluded.seq, position = excluded.position,
                    fields = excluded.fields, updated_at = excluded.updated_at)
            INSERT INTO change_log (seq, collection, id, rev, position, fields, bytes_delta, committed_at,
                prev_seq, author_user, author_device, author_label, via)
            SELECT s, c, i, r, p, f, d, $13, ps, au, ad, (SELECT label FROM tokens WHERE hash = th), av
            FROM unnest($7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::text[], $12::text[], $14::bigint[],
                $15::bigint[], $16::text[], $17::text[], $18::text[], $19::text[]) AS t(c, i, r, s, p, f, d, ps, au, ad, th, av)
            """,
            recordColumns + logColumns + [
                String(timestamp), PGArrayLiteral.integers(logged.map { Int64($0.change.storedBytesDelta) }),
                PGArrayLiteral.optionalIntegers(logged.map(\.previousSeq)), PGArrayLiteral.text(authors.map(\.user)),
                PGArrayLiteral.text(authors.map(\.device)), PGArrayLiteral.text(authors.map(\.tokenHash)),
                PGArrayLiteral.text(authors.map(\.via.rawValue)),
            ])
    }
}

/// A record's address in the store, compared by its bytes as the database compares it: ids
/// that differ only in Unicode normalisation are two records (as Swift strings they are equal,
/// and the writer's cache took one for the other; StoreConformanceTests).
struct RecordKey: Hashable {
    let collection: String
    let id: String

    static func == (left: RecordKey, right: RecordKey) -> Bool {
        RecordID(left.collection) == RecordID(right.collection) && RecordID(left.id) == RecordID(right.id)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(RecordID(collection))
        hasher.combine(RecordID(id))
    }
}
