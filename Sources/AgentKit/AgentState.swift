import AgentDecisions
import Foundation
import PlistFormat
import SQLiteKit
import SyncCore
import SyncProtocol

/// What the agent knows it last agreed on with the server, kept in `DIR/.plistsync/state.sqlite`:
/// per record the synced rev, position, fields and the hash of the file as last seen or written;
/// per collection the last seq seen. Loaded into memory at start; every change is written through.
final class AgentState {
    /// One record's last synced state.
    typealias Entry = SyncedRecord

    private let db: SQLiteDatabase
    private(set) var records: [String: [RecordID: Entry]] = [:]
    /// Live records per collection, kept with `records` (the status shows them every 200 ms:
    /// counting them there cost a walk of every record, ~ms at 100k).
    private(set) var liveCount: [String: Int] = [:]
    private(set) var lastSeq: [String: Int64] = [:]
    private(set) var orderHash: [String: String] = [:]

    static let migrations = [
        """
        -- The last seq this mirror has applied, per collection: SUB ... SINCE resumes from it.
        CREATE TABLE collections (
            name     TEXT PRIMARY KEY,
            last_seq INTEGER NOT NULL DEFAULT 0
        ) STRICT;

        -- Per record, the last state both sides agreed on: the base of the next push and of
        -- three-way merges. fields is canonical JSON (NULL: deleted on the server); file_hash is
        -- the hash of the file as last seen or written (NULL: no file expected).
        CREATE TABLE records (
            collection TEXT NOT NULL,
            id         TEXT NOT NULL,
            rev        INTEGER NOT NULL,
            position   TEXT,
            fields     TEXT,
            file_hash  TEXT,
            format     TEXT NOT NULL DEFAULT 'xml',
            PRIMARY KEY (collection, id)
        ) STRICT, WITHOUT ROWID;
        """,
        """
        -- The hash of the order file as the agent last wrote or read it: at start, a file that
        -- differs was edited while the agent was stopped (one that matches is not an edit).
        ALTER TABLE collections ADD COLUMN order_hash TEXT;
        """,
        """
        -- Facts about the mirror: 'server_id', the store this mirror was last synced with;
        -- 'attached', the collections mirrored through an app file (comma-separated); 'rebase',
        -- the collections to bring a store restored from an older backup forward with, and
        -- 'restored_seq', the seq that backup ended at.
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;
        """,
    ]

    init(path: String) throws(StoreError) {
        db = try SQLiteDatabase(path: path)
        // NORMAL in WAL survives a killed agent; after power loss the next scan re-derives
        // anything lost by comparing files against the server (revisions make that safe). The
        // records are kept in memory anyway: SQLite's page cache is bounded at 512 KiB (its
        // default, 2 MiB, stayed in an idle agent's heap after a sync).
        try db.execute(script: "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-512;")
        try db.migrate(Self.migrations)
        for (name, seq, hash) in try db.query("SELECT name, last_seq, order_hash FROM collections", row: { ($0.text(0) ?? "", $0.integer(1), $0.text(2)) }) {
            lastSeq[name] = seq
            orderHash[name] = hash
        }
        for (collection, id, entry) in try db.query(
            "SELECT collection, id, rev, position, fields, file_hash, format FROM records", row: { row in
                (row.text(0) ?? "", row.text(1) ?? "",
                 Entry(rev: row.integer(2), position: row.text(3), fieldsJSON: row.text(4), fileHash: row.text(5),
                       format: PlistFile.Format(rawValue: row.text(6) ?? "xml") ?? .xml))
            })
        {
            records[collection, default: [:]][RecordID(id)] = entry
            if entry.isLive { liveCount[collection, default: 0] += 1 }
        }
    }

    /// The server store this mirror was synced with (HELLO's server id).
    private(set) var serverID: String?

    /// Notes the server id HELLO gave; true when it differs from the one this mirror was synced
    /// with: a store restored from a backup (or replaced), whose seqs mean nothing to this state.
    /// Every collection is then replayed in full and rebased (`isRebasing`): the records are
    /// kept, so what this mirror synced after the backup goes back up as edits.
    /// The state in memory changes first, whatever the writes do: `saving` is handed the
    /// writes, which it runs and reports (a full disk must not leave the rebase half done).
    func noteServer(_ id: String, restoredSeq: Int64? = nil, saving: (() throws -> Void) -> Void) -> Bool {
        if serverID == nil { saving { serverID = try meta("server_id") } }
        guard serverID != id else { return false }
        let changed = serverID != nil
        let collections = Set(records.keys).union(lastSeq.keys)
        if changed {
            for collection in collections { lastSeq[collection] = 0 }
            rebasing.formUnion(collections)
            self.restoredSeq = restoredSeq
        }
        serverID = id
        saving {
            if changed {
                for collection in collections { try setLastSeq(0, collection) }
                try setRebasing(rebasing)
                try setMeta("restored_seq", restoredSeq.map(String.init))
            }
            try setMeta("server_id", id)
        }
        return changed
    }

    /// Collections whose next full replay rebases this mirror on a store restored from an
    /// older backup (meta 'rebase', comma-separated), until that replay ends.
    private(set) lazy var rebasing: Set<String> = {
        Self.names(in: (try? meta("rebase")) ?? nil) ?? []
    }()

    func isRebasing(_ collection: String) -> Bool { rebasing.contains(collection) }

    /// The seq the server's backup ended at (HELLO's `restored_seq`), while rebasing on it:
    /// changes at or below it are the backup's, above it news from others. Nil: unknown (every
    /// state in the replay is taken as the backup's).
    private(set) lazy var restoredSeq: Int64? = {
        ((try? meta("restored_seq")) ?? nil).flatMap { Int64($0) }
    }()

    /// The collection's full replay ended: it is in step with the store again.
    func endRebase(_ collection: String) throws(StoreError) {
        guard rebasing.contains(collection) else { return }
        try setRebasing(rebasing.subtracting([collection]))
    }

    private func setRebasing(_ collections: Set<String>) throws(StoreError) {
        rebasing = collections
        try setMeta("rebase", collections.sorted().joined(separator: ","))
    }

    /// Notes which collections are mirrored through an attached app file (the rest as folders);
    /// the collections whose way of being mirrored changed since the last start, each forgotten
    /// here: its synced state names files in the place it is no longer mirrored in, which the
    /// engine would read as deleted (a collection attached after it was a folder here lost every
    /// record that way). Forgotten, it is downloaded afresh into its new place and merged with
    /// what that place holds. `attachedBefore` answers for a state written before this was
    /// noted (the collections whose shadow folders exist).
    func noteAttached(_ attached: Set<String>, attachedBefore: () -> Set<String>) throws(StoreError) -> Set<String> {
        let saved = try meta("attached")
        let before = Self.names(in: saved) ?? attachedBefore()
        let changed = attached.symmetricDifference(before).filter { records[$0] != nil || lastSeq[$0] != nil }
        for collection in changed {
            try forget(collection)
            try forget(Names.conflictsCollection(of: collection))
        }
        let value = attached.sorted().joined(separator: ",")
        if saved != value { try setMeta("attached", value) }
        return Set(changed)
    }

    /// A fact about the mirror (the meta table); nil when it was never noted.
    private func meta(_ key: String) throws(StoreError) -> String? {
        try db.queryFirst("SELECT value FROM meta WHERE key = ?", .text(key)) { $0.text(0) } ?? nil
    }

    /// Notes a fact about the mirror; nil removes it.
    private func setMeta(_ key: String, _ value: String?) throws(StoreError) {
        guard let value else {
            try db.execute("DELETE FROM meta WHERE key = ?", .text(key))
            return
        }
        try db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", .text(key), .text(value))
    }

    /// The collection names of a comma-separated meta value.
    private static func names(in value: String?) -> Set<String>? {
        value.map { Set($0.split(separator: ",").map(String.init)) }
    }

    func entry(_ collection: String, _ id: RecordID) -> Entry? {
        records[collection]?[id]
    }

    func set(_ entry: Entry?, _ collection: String, _ id: RecordID) throws(StoreError) {
        let wasLive = records[collection]?[id]?.isLive == true
        let isLive = entry?.isLive == true
        if wasLive != isLive { liveCount[collection, default: 0] += isLive ? 1 : -1 }
        records[collection, default: [:]][id] = entry
        if let entry {
            try insert(entry, collection, id)
        } else {
            try db.execute("DELETE FROM records WHERE collection = ? AND id = ?", .text(collection), .text(id.string))
        }
    }

    private func insert(_ entry: Entry, _ collection: String, _ id: RecordID) throws(StoreError) {
        try db.execute(
            """
            INSERT INTO records (collection, id, rev, position, fields, file_hash, format) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (collection, id) DO UPDATE SET rev = excluded.rev, position = excluded.position,
                fields = excluded.fields, file_hash = excluded.file_hash, format = excluded.format
            """,
            .text(collection), .text(id.string), .integer(entry.rev), entry.position.map(SQLValue.text) ?? .null,
            entry.fieldsJSON.map(SQLValue.text) ?? .null, entry.fileHash.map(SQLValue.text) ?? .null, .text(entry.format.rawValue))
    }

    /// Forgets everything known of a collection, so the next SUB is a full download.
    func forget(_ collection: String) throws(StoreError) {
        records[collection] = nil
        liveCount[collection] = nil
        lastSeq[collection] = nil
        orderHash[collection] = nil
        try db.execute("DELETE FROM records WHERE collection = ?", .text(collection))
        try db.execute("DELETE FROM collections WHERE name = ?", .text(collection))
        try endRebase(collection)
    }

    /// Moves everything known of a collection to its new name.
    func rename(_ from: String, to: String) throws(StoreError) {
        guard from != to else { return }
        try forget(to)
        records[to] = records.removeValue(forKey: from)
        liveCount[to] = liveCount.removeValue(forKey: from)
        lastSeq[to] = lastSeq.removeValue(forKey: from)
        orderHash[to] = orderHash.removeValue(forKey: from)
        try db.execute("UPDATE records SET collection = ? WHERE collection = ?", .text(to), .text(from))
        try db.execute("UPDATE collections SET name = ? WHERE name = ?", .text(to), .text(from))
    }

    func setOrderHash(_ hash: String?, _ collection: String) throws(StoreError) {
        guard orderHash[collection] != hash else { return }
        orderHash[collection] = hash
        lastSeq[collection] = lastSeq[collection] ?? 0
        try db.execute(
            "INSERT INTO collections (name, order_hash) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET order_hash = excluded.order_hash",
            .text(collection), hash.map(SQLValue.text) ?? .null)
    }

    func setLastSeq(_ seq: Int64, _ collection: String) throws(StoreError) {
        lastSeq[collection] = seq
        try db.execute(
            "INSERT INTO collections (name, last_seq) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET last_seq = excluded.last_seq",
            .text(collection), .integer(seq))
    }

    private var batchDepth = 0

    /// Starts grouping writes into one transaction (one WAL append), e.g. a replay of 10,000
    /// changes; nests; `endBatch()` commits when the outermost ends.
    func beginBatch() {
        batchDepth += 1
        if batchDepth == 1 { try? db.execute(script: "BEGIN") }
    }

    func endBatch() throws(StoreError) {
        guard batchDepth > 0 else { return }
        batchDepth -= 1
        guard batchDepth == 0 else { return }
        do {
            try db.execute(script: "COMMIT")
        } catch {
            // A commit that fails (a full disk) may leave the transaction open: what it held is
            // written again by `catchUp()`.
            try? db.execute(script: "ROLLBACK")
            isBehind = true
            throw error
        }
    }

    /// A write failed: the file lacks something the state in memory has.
    private(set) var isBehind = false

    func markBehind() { isBehind = true }

    /// Writes the whole state in memory again, after a failed write left the file behind it.
    func catchUp() throws(StoreError) {
        guard isBehind else { return }
        try db.execute(script: "SAVEPOINT catch_up")
        do {
            try db.execute(script: "DELETE FROM records; DELETE FROM collections;")
            for (collection, entries) in records {
                for (id, entry) in entries { try insert(entry, collection, id) }
            }
            for name in Set(lastSeq.keys).union(orderHash.keys) {
                try db.execute("INSERT INTO collections (name, last_seq, order_hash) VALUES (?, ?, ?)",
                               .text(name), .integer(lastSeq[name] ?? 0), orderHash[name].map { .text($0) } ?? .null)
            }
            if let serverID { try setMeta("server_id", serverID) }
            try setRebasing(rebasing)
            try setMeta("restored_seq", restoredSeq.map(String.init))
            try db.execute(script: "RELEASE catch_up")
        } catch {
            try? db.execute(script: "ROLLBACK TO catch_up; RELEASE catch_up;")
            throw error
        }
        isBehind = false
    }
}
