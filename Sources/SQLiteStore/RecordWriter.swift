import Foundation
import SQLiteKit
import SyncCore
import SyncProtocol

/// Applies batches of writes in one transaction each: the group commit.
///
/// Runs on the thread pool, one batch at a time (the committer guarantees it). Each operation's
/// revision check happens inside the transaction, so it is atomic with its write.
public final class RecordWriter: @unchecked Sendable {
    private let db: SQLiteDatabase
    private var seq: Int64
    /// Seconds a record's fields must have lived to be kept as a version when replaced.
    private let versionMinimumAge: Int64

    public init(folder: DataFolder, versionMinimumAge: Int64 = RecordVersion.defaultMinimumAge) throws(StoreError) {
        db = try folder.open()
        self.versionMinimumAge = versionMinimumAge
        seq = try db.queryFirst("SELECT value FROM meta WHERE key = 'seq'") { $0.integer(0) } ?? 0
    }

    /// Applies `operations` in order and makes them durable; one outcome per operation. When
    /// this throws, nothing of the batch was committed.
    public func commit(_ operations: [StoreOperation], now: Date = Date()) throws(StoreError) -> [StoreOutcome] {
        let startSeq = seq
        let timestamp = Int64(now.timeIntervalSince1970)
        do {
            return try db.transaction(immediate: true) { () throws(StoreError) in
                var outcomes: [StoreOutcome] = []
                outcomes.reserveCapacity(operations.count)
                for operation in operations {
                    outcomes.append(try apply(operation, timestamp: timestamp))
                }
                if seq != startSeq {
                    try db.execute("UPDATE meta SET value = ? WHERE key = 'seq'", .integer(seq))
                }
                return outcomes
            }
        } catch {
            seq = startSeq
            throw error
        }
    }

    private func apply(_ operation: StoreOperation, timestamp: Int64) throws(StoreError) -> StoreOutcome {
        switch operation {
        case .put(let collection, let id, let baseRev, let fieldsJSON):
            return try put(collection, id, baseRev, fieldsJSON, timestamp)
        case .move(let collection, let id, let baseRev, let placement):
            return try move(collection, id, baseRev, placement, timestamp)
        case .delete(let collection, let id, let baseRev):
            let (current, writtenAt) = try stored(collection, id)
            guard let rev = RevisionRules.delete(baseRev: baseRev, over: current) else {
                return .conflict(collection: collection, id: id, current: current)
            }
            return try record(collection, RecordState(id: id, rev: rev, body: .deleted), timestamp, replacing: current, writtenAt: writtenAt)
        case .createCollection(let name, let owner):
            let exists = try db.queryFirst("SELECT 1 FROM collections WHERE name = ?", .text(name)) { _ in true } ?? false
            if exists { return .refused(ProtocolError(.exists, "collection \(name) exists")) }
            try db.execute("INSERT INTO collections (name, owner, created_at) VALUES (?, ?, ?)", .text(name), .text(owner), .integer(timestamp))
            try db.execute("INSERT INTO members (collection, user, role) VALUES (?, ?, ?)", .text(name), .text(owner), .integer(Int64(Role.admin.rawValue)))
            return .done
        case .dropCollection(let name):
            let removed = try db.execute("DELETE FROM collections WHERE name = ?", .text(name))
            guard removed > 0 else { return .refused(ProtocolError(.notFound, "no collection \(name)")) }
            try db.execute("DELETE FROM members WHERE collection = ?", .text(name))
            try db.execute("DELETE FROM records WHERE collection IN (?, ?)", .text(name), .text(Names.conflictsCollection(of: name)))
            try db.execute("DELETE FROM record_versions WHERE collection IN (?, ?)", .text(name), .text(Names.conflictsCollection(of: name)))
            return .done
        case .renameCollection(let from, let to):
            let taken = try db.queryFirst("SELECT 1 FROM collections WHERE name = ?", .text(to)) { _ in true } ?? false
            if taken { return .refused(ProtocolError(.exists, "collection \(to) exists")) }
            let copied = try db.execute(
                "INSERT INTO collections (name, owner, created_at) SELECT ?, owner, created_at FROM collections WHERE name = ?", .text(to), .text(from))
            guard copied > 0 else { return .refused(ProtocolError(.notFound, "no collection \(from)")) }
            try db.execute("UPDATE members SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE records SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE records SET collection = ? WHERE collection = ?",
                           .text(Names.conflictsCollection(of: to)), .text(Names.conflictsCollection(of: from)))
            try db.execute("UPDATE record_versions SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("DELETE FROM collections WHERE name = ?", .text(from))
            return .done
        case .grant(let collection, let user, let role):
            let known = try db.queryFirst("SELECT 1 FROM users WHERE name = ?", .text(user)) { _ in true } ?? false
            guard known else { return .refused(ProtocolError(.notFound, "no user \(user)")) }
            if let role {
                try db.execute(
                    "INSERT INTO members (collection, user, role) VALUES (?, ?, ?) ON CONFLICT (collection, user) DO UPDATE SET role = excluded.role",
                    .text(collection), .text(user), .integer(Int64(role.rawValue)))
            } else {
                try db.execute("DELETE FROM members WHERE collection = ? AND user = ?", .text(collection), .text(user))
            }
            return .done
        case .createToken(let hash, let user, let label):
            try db.execute("INSERT INTO tokens (hash, user, label, created_at) VALUES (?, ?, ?, ?)",
                           .text(hash), .text(user), label.map(SQLValue.text) ?? .null, .integer(timestamp))
            return .done
        case .revokeToken(let hash, let user):
            let removed = if let user {
                try db.execute("DELETE FROM tokens WHERE hash = ? AND user = ?", .text(hash), .text(user))
            } else {
                try db.execute("DELETE FROM tokens WHERE hash = ?", .text(hash))
            }
            return removed > 0 ? .done : .refused(ProtocolError(.notFound, "no such token"))
        case .touchToken(let hash, let time):
            try db.execute("UPDATE tokens SET last_used_at = ? WHERE hash = ?", .integer(time), .text(hash))
            return .done
        case .purgeTombstones(let cutoff):
            let newest = try db.queryFirst(
                "SELECT max(seq) FROM records WHERE fields IS NULL AND updated_at < ?", .integer(cutoff)) { $0.isNull(0) ? nil : $0.integer(0) } ?? nil
            if let newest {
                try db.execute("DELETE FROM records WHERE fields IS NULL AND updated_at < ?", .integer(cutoff))
                try db.execute("UPDATE meta SET value = max(value, ?) WHERE key = 'purged_seq'", .integer(newest))
            }
            try db.execute("DELETE FROM record_versions WHERE replaced_at < ?", .integer(cutoff))
            return .done
        }
    }

    private func put(_ collection: String, _ id: String, _ baseRev: Int64, _ fieldsJSON: String, _ timestamp: Int64) throws(StoreError) -> StoreOutcome {
        let (current, writtenAt) = try stored(collection, id)
        switch RevisionRules.put(baseRev: baseRev, over: current) {
        case .update(let rev, let position):
            return try record(
                collection, RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), timestamp, replacing: current, writtenAt: writtenAt)
        case .create(let rev):
            let position = try positionAtEnd(collection, excluding: id)
            return try record(collection, RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), timestamp, replacing: current)
        case .conflict:
            return .conflict(collection: collection, id: id, current: current)
        }
    }

    private func move(_ collection: String, _ id: String, _ baseRev: Int64, _ placement: Placement, _ timestamp: Int64) throws(StoreError) -> StoreOutcome {
        let current = try state(collection, id)
        switch try placement.plan(moving: id, of: collection, baseRev: baseRev, over: current, in: Neighbours(db: db, collection: collection, moving: id)) {
        case .conflict:
            return .conflict(collection: collection, id: id, current: current)
        case .refused(let error):
            return .refused(error)
        case .rebalance(let fieldsJSON, let lower, let upper):
            let neighbours = Neighbours(db: db, collection: collection, moving: id)
            let states = try LocalRekey.states(moving: id, baseRev: baseRev, fieldsJSON: fieldsJSON, between: lower, upper, in: neighbours)
            // Same fields, new key: each state replaces one of the same size.
            return try .rebalanced(writing: states) { state throws(StoreError) in try record(collection, state, timestamp, replacing: state) }
        case .place(let state):
            return try record(collection, state, timestamp, replacing: current)
        }
    }

    /// A MOVE's questions about the other live records, in SQLite.
    private struct Neighbours: NeighbourLookup {
        let db: SQLiteDatabase
        let collection: String
        let moving: String

        private func key(_ condition: String, _ order: String, _ bound: String? = nil) throws(StoreError) -> String? {
            let sql = "SELECT position FROM records WHERE collection = ? AND fields IS NOT NULL AND id != ? \(condition) ORDER BY \(order) LIMIT 1"
            if let bound { return try db.queryFirst(sql, .text(collection), .text(moving), .text(bound)) { $0.text(0) } ?? nil }
            return try db.queryFirst(sql, .text(collection), .text(moving)) { $0.text(0) } ?? nil
        }

        func firstKey() throws(StoreError) -> String? { try key("", "position, id") }
        func lastKey() throws(StoreError) -> String? { try key("", "position DESC, id DESC") }
        func key(below key: String) throws(StoreError) -> String? { try self.key("AND position < ?", "position DESC", key) }
        func key(above key: String) throws(StoreError) -> String? { try self.key("AND position > ?", "position", key) }
        func key(of id: String) throws(StoreError) -> String? {
            guard let state = try RecordReader.state(in: db, collection, id), case .live(let position, _) = state.body else { return nil }
            return position
        }

        func records(atOrBelow key: String, limit: Int) throws(StoreError) -> [RecordState] {
            try records("position <= ?", "position DESC, id DESC", key, limit)
        }

        func records(atOrAbove key: String, limit: Int) throws(StoreError) -> [RecordState] {
            try records("position >= ?", "position, id", key, limit)
        }

        private func records(_ condition: String, _ order: String, _ key: String, _ limit: Int) throws(StoreError) -> [RecordState] {
            try db.query(
                "SELECT id, rev, position, fields FROM records WHERE collection = ? AND fields IS NOT NULL AND id != ? AND \(condition) ORDER BY \(order) LIMIT ?",
                .text(collection), .text(moving), .text(key), .integer(Int64(limit))) { row in
                RecordReader.decodeState(row, id: 0, rev: 1, position: 2, fields: 3)
            }
        }
    }

    private func positionAtEnd(_ collection: String, excluding id: String) throws(StoreError) -> String {
        let last = try db.queryFirst(
            "SELECT position FROM records WHERE collection = ? AND fields IS NOT NULL AND id != ? ORDER BY position DESC, id DESC LIMIT 1",
            .text(collection), .text(id)) { $0.text(0) } ?? nil
        return try key(between: last, nil)
    }

    private func key(between lower: String?, _ upper: String?) throws(StoreError) -> String {
        do {
            return try PositionKey.between(lower, upper)
        } catch {
            throw .sqlite(code: 0, message: "position keys exhausted between \(lower ?? "start") and \(upper ?? "end")")
        }
    }

    /// The record's state and when it was written, in one read (a PUT or DEL needs both).
    private func stored(_ collection: String, _ id: String) throws(StoreError) -> (RecordState?, Int64?) {
        let found = try db.queryFirst(
            "SELECT id, rev, position, fields, updated_at FROM records WHERE collection = ? AND id = ?", .text(collection), .text(id)) { row in
            (RecordReader.decodeState(row, id: 0, rev: 1, position: 2, fields: 3), row.integer(4))
        }
        return (found?.0, found?.1)
    }

    private func state(_ collection: String, _ id: String) throws(StoreError) -> RecordState? {
        try RecordReader.state(in: db, collection, id)
    }

    /// Writes `state` (the next seq); the fields it replaces (`previous`, written at
    /// `writtenAt`) are kept as a version when `RecordVersion.isKept` says so.
    private func record(
        _ collection: String, _ state: RecordState, _ timestamp: Int64, replacing previous: RecordState? = nil, writtenAt: Int64? = nil
    ) throws(StoreError) -> StoreOutcome {
        if let previous, let fields = previous.fieldsJSON,
            RecordVersion.isKept(replacing: previous, writtenAt: writtenAt, with: state, at: timestamp, minimumAge: versionMinimumAge)
        {
            try db.execute(
                "INSERT OR REPLACE INTO record_versions (collection, id, rev, fields, replaced_at) VALUES (?, ?, ?, ?, ?)",
                .text(collection), .text(state.id), .integer(previous.rev), .text(fields), .integer(timestamp))
        }
        seq += 1
        let delta = state.storedFieldBytes - (previous?.storedFieldBytes ?? 0)
        let position: SQLValue
        let fields: SQLValue
        switch state.body {
        case .live(let key, let json):
            position = .text(key)
            fields = .text(json)
        case .deleted:
            position = .null
            fields = .null
        }
        try db.execute(
            """
            INSERT INTO records (collection, id, rev, seq, position, fields, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (collection, id) DO UPDATE SET rev = excluded.rev, seq = excluded.seq,
                position = excluded.position, fields = excluded.fields, updated_at = excluded.updated_at
            """,
            .text(collection), .text(state.id), .integer(state.rev), .integer(seq), position, fields, .integer(timestamp))
        return .changed(Change(collection: collection, seq: seq, state: state, storedBytesDelta: delta))
    }
}
