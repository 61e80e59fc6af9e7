import SQLiteKit
import SyncCore
import SyncProtocol

/// Read-only queries over the store, on its own connection (WAL lets it read while a commit
/// is in flight on the thread pool). Used on the loop thread.
public final class RecordReader {
    let db: SQLiteDatabase
    /// The edits committed whose rows are written behind: every read lays them over its rows.
    let pending: PendingRecords

    init(folder: DataFolder, pending: PendingRecords) throws(StoreError) {
        db = try folder.open()
        self.pending = pending
    }

    public typealias CollectionInfo = SyncCore.CollectionInfo

    /// Identity of this data folder, stable across restarts.
    public func serverID() throws(StoreError) -> String {
        try db.queryFirst("SELECT value FROM meta WHERE key = 'server_id'") { $0.text(0) ?? "" } ?? ""
    }

    /// The last seq handed out.
    public func currentSeq() throws(StoreError) -> Int64 {
        try db.queryFirst(Self.currentSeqQuery) { $0.integer(0) } ?? 0
    }

    /// The seq the store was restored at (`plistsync restore`), if it was.
    public func restoredSeq() throws(StoreError) -> Int64? {
        try db.queryFirst("SELECT value FROM meta WHERE key = 'restored_seq'") { $0.integer(0) }
    }

    /// Every collection with its members and the seq of its latest change.
    public func collections() throws(StoreError) -> [CollectionInfo] {
        var byName: [String: CollectionInfo] = [:]
        for info in try db.query("SELECT name, owner FROM collections", row: { row in
            CollectionInfo(name: row.text(0) ?? "", owner: row.text(1) ?? "", members: [:], lastSeq: 0)
        }) {
            byName[info.name] = info
        }
        for (collection, user, role) in try db.query("SELECT collection, user, role FROM members", row: { row in
            (row.text(0) ?? "", row.text(1) ?? "", Role(rawValue: Int(row.integer(2))) ?? .read)
        }) {
            byName[collection]?.members[user] = role
        }
        for (collection, seq) in try db.query(
            "SELECT name, (SELECT max(seq) FROM changes WHERE collection = name) FROM collections", row: { row in (row.text(0) ?? "", row.integer(1)) })
        {
            byName[collection]?.lastSeq = seq
        }
        return byName.values.sorted { $0.name < $1.name }
    }

    /// Bytes of live record fields per collection (a full scan: used only when byte quotas are on).
    public func storedBytesByCollection() throws(StoreError) -> [String: Int] {
        let view = pending.beginRead()
        defer { view.end() }
        return try db.transaction { () throws(StoreError) in
            var sizes: [String: Int] = [:]
            for (collection, bytes) in try db.query(
                "SELECT collection, sum(length(CAST(fields AS BLOB))) FROM records WHERE fields IS NOT NULL GROUP BY collection",
                row: { row in (row.text(0) ?? "", Int(row.integer(1))) })
            {
                sizes[collection] = bytes
            }
            for collection in sizes.keys {
                for (id, edit) in view.entries(of: collection) {
                    guard let row = try db.queryFirst(
                        "SELECT seq, length(CAST(fields AS BLOB)) FROM records WHERE collection = ? AND id = ?", .text(collection), .text(id.string),
                        row: { row in (seq: row.integer(0), bytes: Int(row.integer(1))) }), edit.seq > row.seq else { continue }
                    sizes[collection, default: 0] += edit.fieldsJSON.utf8.count - row.bytes
                }
            }
            return sizes
        }
    }

    /// One record's state, nil when it never existed (or its tombstone was purged).
    public func record(_ collection: String, _ id: String) throws(StoreError) -> RecordState? {
        let view = pending.beginRead()
        defer { view.end() }
        let row = try db.queryFirst(
            "SELECT id, rev, position, fields, seq FROM records WHERE collection = ? AND id = ?", .text(collection), .text(id)) { row in
            (state: Self.decodeState(row, id: 0, rev: 1, position: 2, fields: 3), seq: row.integer(4))
        }
        if let edit = view.entry(collection, id), edit.seq > row?.seq ?? 0 { return edit.state(id: id) }
        return row?.state
    }

    /// The live records of a collection in order, and the seq the listing is current to.
    public func list(_ collection: String) throws(StoreError) -> (records: [RecordState], seq: Int64) {
        let view = pending.beginRead()
        defer { view.end() }
        let waiting = WaitingEdits(view.entries(of: collection))
        return try db.transaction { () throws(StoreError) in
            let records = try db.query(Self.liveInOrder, .text(collection)) { row in waiting.state(row) }
            return (records, view.seq)
        }
    }

    /// The live records of a collection in order, stepped a page at a time on a connection of
    /// their own that holds one snapshot until the end (`SQLiteListing`).
    public func listing(_ collection: String, on connection: SQLiteDatabase) throws(StoreError) -> SQLiteListing {
        let view = pending.beginRead()
        let waiting = WaitingEdits(view.entries(of: collection))
        let (cursor, _) = try SQLiteCursor.open(
            on: connection, prelude: Self.currentSeqQuery, first: { $0.integer(0) }, sql: Self.liveInOrder, .text(collection))
        return SQLiteListing(cursor: cursor, seq: view.seq, waiting: waiting, view: view)
    }

    /// A collection's live records in order (LIST), read whole or stepped by a listing; the
    /// row's seq last, to lay a waiting edit over it.
    static let liveInOrder = "SELECT id, rev, position, fields, seq FROM records WHERE collection = ? AND position IS NOT NULL ORDER BY position, id"
    /// The last seq handed out: the log's last change, or the counter in meta where changes at
    /// the end of the log were deleted since (a purge, a dropped collection).
    static let currentSeqQuery = "SELECT max(coalesce((SELECT value FROM meta WHERE key = 'seq'), 0), coalesce((SELECT max(seq) FROM changes), 0))"

    /// A row of `liveInOrder` (its fields are never NULL), without its waiting edit.
    static func decodeLive(_ row: Row) -> RecordState {
        RecordState(id: row.text(0) ?? "", rev: row.integer(1), body: .live(position: row.text(2) ?? "", fieldsJSON: row.text(3) ?? "{}"))
    }

    /// At most `limit` live records after `after` in order, read along `records_in_order` (no
    /// record before the cursor is visited), and the seq the page is current to.
    public func page(_ collection: String, after: RecordCursor?, limit: Int) throws(StoreError) -> (records: [RecordState], seq: Int64) {
        let view = pending.beginRead()
        defer { view.end() }
        let waiting = WaitingEdits(view.entries(of: collection))
        return try db.transaction { () throws(StoreError) in
            guard let after else {
                return (try db.query(
                    "SELECT id, rev, position, fields, seq FROM records WHERE collection = ? AND position IS NOT NULL ORDER BY position, id LIMIT ?",
                    .text(collection), .integer(Int64(limit)), row: waiting.state), view.seq)
            }
            return (try db.query(
                """
                SELECT id, rev, position, fields, seq FROM records WHERE collection = ? AND position IS NOT NULL AND (position, id) > (?, ?)
                ORDER BY position, id LIMIT ?
                """,
                .text(collection), .text(after.position), .text(after.id), .integer(Int64(limit)), row: waiting.state), view.seq)
        }
    }

    /// The latest state of every record changed after `since`, in seq order, at most `limit`
    /// of them, and the seq the answer is current to (meaningful when fewer than `limit` came
    /// back: then nothing after `since` is missing); nil when tombstones after `since` may have
    /// been purged.
    public func changes(_ collection: String, since: Int64, limit: Int = Int(Int32.max)) throws(StoreError) -> (changes: [Change], seq: Int64)? {
        let view = pending.beginRead()
        defer { view.end() }
        return try db.transaction { () throws(StoreError) -> (changes: [Change], seq: Int64)? in
            guard try keepsChanges(after: since) else { return nil }
            var changes: [Change] = []
            try replay(collection, since: since, limit: limit, view, row: { row in
                changes.append(Change(collection: collection, seq: row.integer(2), state: Self.decodeState(row, id: 0, rev: 1, position: 3, fields: 4)))
            }, edit: { id, edit in
                changes.append(Change(collection: collection, seq: edit.seq, state: edit.state(id: id)))
            })
            return (changes, view.seq)
        }
    }

    /// `changes` as `* CHANGE` lines written from the rows.
    public func changeLines(_ collection: String, since: Int64, limit: Int) throws(StoreError) -> (lines: EncodedLines, seq: Int64)? {
        let view = pending.beginRead()
        defer { view.end() }
        return try db.transaction { () throws(StoreError) -> (lines: EncodedLines, seq: Int64)? in
            guard try keepsChanges(after: since) else { return nil }
            let prefix = EncodedLines.prefix("CHANGE", collection)
            var lines = EncodedLines()
            lines.bytes.reserveCapacity(min(limit, 4096) * 128)
            try replay(collection, since: since, limit: limit, view, row: { row in
                let changeSeq = row.integer(2)
                RowLines.appendChangeStart(prefix, seq: changeSeq, to: &lines.bytes)
                RowLines.appendState(row, id: 0, rev: 1, position: 3, fields: 4, to: &lines.bytes)
                lines.count += 1
                lines.lastSeq = changeSeq
            }, edit: { id, edit in
                lines.bytes.append(contentsOf: Change(collection: collection, seq: edit.seq, state: edit.state(id: id)).line.utf8)
                lines.count += 1
                lines.lastSeq = edit.seq
            })
            return (lines, view.seq)
        }
    }

    /// The records changed after seq ?2 in collection ?1, at most ?3, each once (its latest
    /// state) in seq order: the log's changes after ?2 that are still their record's row. The
    /// log leads (CROSS JOIN): its order is the answer's.
    static let latestChangesSince = """
        SELECT r.id, r.rev, r.seq, r.position, r.fields FROM changes c CROSS JOIN records r
        WHERE c.collection = ?1 AND c.seq > ?2 AND r.collection = ?1 AND r.id = c.id AND r.seq = c.seq ORDER BY c.seq LIMIT ?3
        """

    /// Whether every change after `since` is still kept (no tombstone after it was purged).
    private func keepsChanges(after since: Int64) throws(StoreError) -> Bool {
        let purged = try db.queryFirst("SELECT value FROM meta WHERE key = 'purged_seq'") { $0.integer(0) } ?? 0
        return since == 0 || since >= purged
    }

    static func state(in db: SQLiteDatabase, _ collection: String, _ id: String) throws(StoreError) -> RecordState? {
        try db.queryFirst(
            "SELECT id, rev, position, fields FROM records WHERE collection = ? AND id = ?", .text(collection), .text(id)) { row in
            decodeState(row, id: 0, rev: 1, position: 2, fields: 3)
        }
    }

    static func decodeState(_ row: Row, id: Int32, rev: Int32, position: Int32, fields: Int32) -> RecordState {
        let body: RecordState.Body = row.isNull(fields)
            ? .deleted : .live(position: row.text(position) ?? "", fieldsJSON: row.text(fields) ?? "{}")
        return RecordState(id: row.text(id) ?? "", rev: row.integer(rev), body: body)
    }
}
