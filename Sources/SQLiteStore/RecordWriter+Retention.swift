import SQLiteKit
import SyncCore

/// What a purge lets go of: tombstones past their time with their history, and the log's old
/// changes beyond `--history-days` (thinned by tier before that).
extension RecordWriter {
    func purge(tombstonesUpdatedBefore cutoff: Int64, history: HistoryRetention) throws(StoreError) {
        let newest = try db.queryFirst(
            "SELECT max(seq) FROM records WHERE fields IS NULL AND updated_at < ?", .integer(cutoff)) { $0.isNull(0) ? nil : $0.integer(0) } ?? nil
        if let newest {
            // A purged record's history goes with it (walked back along its chain, not a scan of
            // the log): no listing before its delete can be rebuilt.
            let heads = try db.query("SELECT seq FROM records WHERE fields IS NULL AND updated_at < ?", .integer(cutoff)) { $0.integer(0) }
            for head in heads { try deleteHistory(from: head) }
            try db.execute("DELETE FROM records WHERE fields IS NULL AND updated_at < ?", .integer(cutoff))
            try db.execute("UPDATE meta SET value = max(value, ?) WHERE key = 'purged_seq'", .integer(newest))
            try keepSeq()
            try raiseLogFrom(to: newest)
        }
        try trimLog(before: history.cutoff)
        try thinLog(history)
        try db.execute("DELETE FROM record_versions WHERE replaced_at < ?", .integer(history.cutoff))
        try db.execute("DELETE FROM invitations WHERE expires_at < ? OR (uses >= uses_allowed AND created_at < ?)", .integer(cutoff), .integer(cutoff))
    }

    /// Deletes a record's logged changes from its latest (`head`) back along the chain.
    private func deleteHistory(from head: Int64) throws(StoreError) {
        var next: Int64? = head
        while let seq = next {
            next = try db.queryFirst("SELECT prev_seq FROM changes WHERE seq = ?", .integer(seq)) { $0.isNull(0) ? nil : $0.integer(0) } ?? nil
            try db.execute("DELETE FROM changes WHERE seq = ?", .integer(seq))
        }
    }

    /// Deletes the log's changes made before `cutoff` (seconds since 1970), but never a
    /// record's latest. Seqs run with time, so the old changes are the log's first rows. (The
    /// records' latest changes older than the cutoff are read again at every purge: one that
    /// stopped being a latest since must go too.)
    private func trimLog(before cutoff: Int64) throws(StoreError) {
        let firstKept = try db.queryFirst("SELECT seq FROM changes WHERE at >= ? ORDER BY seq LIMIT 1", .integer(cutoff)) { $0.integer(0) }
        let bound = firstKept ?? (seq + 1)
        let removed = try db.execute(
            """
            DELETE FROM changes WHERE seq < ? AND NOT EXISTS
                (SELECT 1 FROM records r WHERE r.collection = changes.collection AND r.id = changes.id AND r.seq = changes.seq)
            """, .integer(bound))
        if removed > 0 { try raiseLogFrom(to: bound - 1) }
    }

    /// Thins each tier of the log from where the last purge left it (`thinned_<bucket>`: the
    /// time reached, and `thinned_<bucket>_seq`: the first change not thinned yet, so a purge
    /// reads only the changes new to the tier): a record's latest change of each bucket stays,
    /// and the chain of the next kept one skips those let go.
    private func thinLog(_ history: HistoryRetention) throws(StoreError) {
        for tier in history.tiers {
            let key = "thinned_\(tier.bucket)"
            let doneTime = try db.queryFirst("SELECT value FROM meta WHERE key = ?", .text(key)) { $0.integer(0) } ?? tier.from
            let doneSeq = try db.queryFirst("SELECT value FROM meta WHERE key = ?", .text(key + "_seq")) { $0.integer(0) } ?? 0
            let from = max(doneTime, tier.from)
            guard from < tier.to else { continue }
            // Seqs run with time: the tier's changes are a range of them.
            let end = try db.queryFirst("SELECT seq FROM changes WHERE seq >= ? AND at >= ? ORDER BY seq LIMIT 1",
                                        .integer(doneSeq), .integer(tier.to)) { $0.integer(0) } ?? (seq + 1)
            let entries = try db.query(
                "SELECT seq, collection, id, at, prev_seq FROM changes WHERE seq >= ? AND seq < ? AND at >= ? ORDER BY seq",
                .integer(doneSeq), .integer(end), .integer(from)) { row in
                HistoryRetention.Entry(seq: row.integer(0), collection: row.text(1) ?? "", id: row.text(2) ?? "", at: row.integer(3),
                                       previous: row.isNull(4) ? nil : row.integer(4))
            }
            let (drop, relink) = HistoryRetention.thin(entries, bucket: tier.bucket)
            for gone in drop { try db.execute("DELETE FROM changes WHERE seq = ?", .integer(gone)) }
            for link in relink {
                try db.execute("UPDATE changes SET prev_seq = ? WHERE seq = ?", link.previous.map(SQLValue.integer) ?? .null, .integer(link.seq))
            }
            if let latest = relink.map(\.seq).max() { try raiseLogFrom(to: latest) }
            for (name, value) in [(key, tier.to), (key + "_seq", end)] {
                try db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", .text(name), .integer(value))
            }
        }
    }

    /// No listing before `seq` can be rebuilt from the log any more.
    private func raiseLogFrom(to seq: Int64) throws(StoreError) {
        try db.execute("INSERT INTO meta (key, value) VALUES ('log_from', ?) ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)",
                       .integer(seq))
    }
}
