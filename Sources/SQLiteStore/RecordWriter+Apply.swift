import SQLiteKit
import SyncCore
#if SIMULATION_MUTATIONS
import SyncProtocol
#endif

/// The rows written behind the log: a commit of field edits appends them to the log only (one
/// page at its end), and they wait in `PendingRecords` until a drain writes them to their rows
/// in key order, many to a B-tree page, in transactions of their own that need no fsync (the
/// log already holds them: a drain lost to a crash is done again from it at the next start).
extension RecordWriter {
    /// A drain in progress: the records that waited when it began, in key order.
    struct Drain {
        var keys: [PendingRecords.Key]
        var next = 0
        /// The last seq committed when it began: once every key is written, every change up to
        /// it is in its row.
        var upTo: Int64
    }

    /// The record's waiting edit, as the transaction in progress sees it.
    func waitingEdit(_ collection: String, _ id: String) -> PendingRecords.Entry? {
        let key = PendingRecords.Key(collection: collection, id: id)
        if let change = staged[key] {
            guard case .waiting(let entry) = change else { return nil }
            return entry
        }
        return pending.waiting(key)
    }

    /// Writes every waiting edit to its row in the transaction in progress (before an
    /// operation that reads or deletes rows in bulk: a drop, a rename, a purge).
    func writeWaitingRows() throws(StoreError) {
        // `waitingEdit` leaves out the keys this transaction retired.
        for key in Set(pending.waitingKeys()).union(staged.keys).sorted() {
            guard let entry = waitingEdit(key.collection.string, key.id.string) else { continue }
            try writeRow(key, entry)
            staged[key] = .retired
        }
    }

    /// How far the rows may lag the log in seqs before a drain begins however few edits wait:
    /// what a start after a crash reads again.
    static let maxLagSeqs: Int64 = 65_536

    /// Whether `applyBehind(limit:threshold:)` would write a chunk now.
    func chunkIsDue(threshold: Int) -> Bool {
        drain != nil || pending.waitingCount >= threshold || seq - appliedSeq >= Self.maxLagSeqs
    }

    /// Writes up to `limit` waiting edits to their rows, the next chunk of the drain, which
    /// begins when at least `threshold` edits wait (or the rows lag `maxLagSeqs`). Returns
    /// whether the drain has more to do. Runs between commits, on the commit connection.
    @discardableResult
    func applyBehind(limit: Int, threshold: Int) throws(StoreError) -> Bool {
        if drain == nil {
            let waiting = pending.waitingCount
            let lagging = seq - appliedSeq >= Self.maxLagSeqs || (threshold <= 1 && appliedSeq < seq)
            if waiting == 0 {
                if lagging { try saveAppliedSeq(seq) }
                return false
            }
            guard waiting >= threshold || lagging else { return false }
            drain = Drain(keys: pending.waitingKeys(), upTo: seq)
        }
        guard var drain else { return false }
        let end = min(drain.next + limit, drain.keys.count)
        var retired: [PendingRecords.Key: PendingRecords.Staged] = [:]
        try db.execute(script: "PRAGMA synchronous=NORMAL;")
        defer { try? db.execute(script: "PRAGMA synchronous=FULL;") }
        do {
            try db.transaction(immediate: true) { () throws(StoreError) in
                for key in drain.keys[drain.next..<end] {
                    // Written since the drain began: its edit may be newer, or gone to its row.
                    guard let entry = pending.waiting(key) else { continue }
                    try writeRow(key, entry)
                    retired[key] = .retired
                }
                if end == drain.keys.count { try saveAppliedSeq(drain.upTo) }
            }
        } catch {
            self.drain = nil
            throw error
        }
        pending.publish(retired, seq: seq)
        drain.next = end
        self.drain = end < drain.keys.count ? drain : nil
        return self.drain != nil
    }

    private func writeRow(_ key: PendingRecords.Key, _ entry: PendingRecords.Entry) throws(StoreError) {
        let write = statements.updateFields
        try write.bind(1, key.collection.string)
        try write.bind(2, key.id.string)
        try write.bind(3, entry.rev)
        try write.bind(4, entry.seq)
        try write.bind(6, entry.at)
        try write.run(bindingInPlace: entry.fieldsJSON, at: 5)
    }

    private func saveAppliedSeq(_ upTo: Int64) throws(StoreError) {
        try db.execute("UPDATE meta SET value = ? WHERE key = 'applied_seq'", .integer(upTo))
        appliedSeq = upTo
    }

    /// At start: writes to their rows the changes the log holds past `applied_seq` (edits that
    /// were waiting when the server stopped), each row taking its latest change.
    func catchUpRows() throws(StoreError) {
        appliedSeq = try db.queryFirst("SELECT value FROM meta WHERE key = 'applied_seq'") { $0.integer(0) } ?? seq
        guard appliedSeq < seq else { return }
        #if SIMULATION_MUTATIONS
        if Mutation.active == .rowsNotCaughtUpAtStart { return }
        #endif
        try db.transaction(immediate: true) { () throws(StoreError) in
            let rows = try db.query(
                "SELECT collection, id, rev, seq, position, fields, at FROM changes WHERE seq > ? ORDER BY seq", .integer(appliedSeq)) { row in
                [SQLValue.text(row.text(0) ?? ""), .text(row.text(1) ?? ""), .integer(row.integer(2)), .integer(row.integer(3)),
                 row.text(4).map(SQLValue.text) ?? .null, row.text(5).map(SQLValue.text) ?? .null, .integer(row.integer(6))]
            }
            for values in rows {
                try db.execute(
                    """
                    INSERT INTO records (collection, id, rev, seq, position, fields, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (collection, id) DO UPDATE SET rev = excluded.rev, seq = excluded.seq, position = excluded.position,
                        fields = excluded.fields, updated_at = excluded.updated_at WHERE excluded.seq > records.seq
                    """, values[0], values[1], values[2], values[3], values[4], values[5], values[6])
            }
            try saveAppliedSeq(seq)
        }
    }
}
