import SQLiteKit
import SyncCore

/// One collection's waiting edits (`PendingRecords`) as a read sees them, laid over the rows it
/// reads in order: a waiting edit keeps its record's place, so only the row's state changes.
struct WaitingEdits: @unchecked Sendable {
    let byID: [RecordID: PendingRecords.Entry]

    init(_ byID: [RecordID: PendingRecords.Entry]) {
        self.byID = byID
    }

    var isEmpty: Bool { byID.isEmpty }

    /// The edit newer than a `liveInOrder`-shaped row (id, rev, position, fields, seq), if any.
    func edit(over row: Row) -> (id: String, edit: PendingRecords.Entry)? {
        guard !byID.isEmpty, let id = row.text(0), let edit = byID[RecordID(id)], edit.seq > row.integer(4) else { return nil }
        return (id, edit)
    }

    /// A `liveInOrder`-shaped row's state, its waiting edit's when that is newer.
    func state(_ row: Row) -> RecordState {
        if let (id, edit) = edit(over: row) { return edit.state(id: id) }
        return RecordReader.decodeLive(row)
    }
}

extension RecordReader {
    /// The replay's rows (`latestChangesSince`) with the collection's waiting edits merged in
    /// by seq: a row whose record has a newer waiting edit is left out, and the edit comes at
    /// its own seq. At most `limit` in all; run inside the caller's transaction.
    func replay(
        _ collection: String, since: Int64, limit: Int, _ view: PendingRecords.ReadView,
        row emitRow: (Row) -> Void, edit emitEdit: (String, PendingRecords.Entry) -> Void
    ) throws(StoreError) {
        var newer: [RecordID: PendingRecords.Entry] = [:]
        for (id, edit) in view.entries(of: collection) where edit.seq > since {
            if edit.seq > (try rowSeq(collection, id.string) ?? 0) { newer[id] = edit }
        }
        guard !newer.isEmpty else {
            _ = try db.query(Self.latestChangesSince, .text(collection), .integer(since), .integer(Int64(limit))) { row in emitRow(row) }
            return
        }
        let edits = newer.sorted { $0.value.seq < $1.value.seq }
        var nextEdit = 0
        var count = 0
        // Each left-out row makes room for one more: the rows read reach past every edit sent.
        _ = try db.query(Self.latestChangesSince, .text(collection), .integer(since), .integer(Int64(limit + newer.count))) { row in
            guard count < limit, newer[RecordID(row.text(0) ?? "")] == nil else { return }
            let rowSeq = row.integer(2)
            while nextEdit < edits.count, edits[nextEdit].value.seq < rowSeq, count < limit {
                emitEdit(edits[nextEdit].key.string, edits[nextEdit].value)
                nextEdit += 1
                count += 1
            }
            guard count < limit else { return }
            emitRow(row)
            count += 1
        }
        while nextEdit < edits.count, count < limit {
            emitEdit(edits[nextEdit].key.string, edits[nextEdit].value)
            nextEdit += 1
            count += 1
        }
    }

    /// The seq of the record's latest change this read sees: its waiting edit's or its row's.
    func latestSeq(_ collection: String, _ id: String, _ view: PendingRecords.ReadView) throws(StoreError) -> Int64? {
        let rowSeq = try rowSeq(collection, id)
        guard let edit = view.entry(collection, id), edit.seq > rowSeq ?? 0 else { return rowSeq }
        return edit.seq
    }

    /// The seq of the record's row, nil when it has none.
    private func rowSeq(_ collection: String, _ id: String) throws(StoreError) -> Int64? {
        try db.queryFirst("SELECT seq FROM records WHERE collection = ? AND id = ?", .text(collection), .text(id)) { $0.integer(0) }
    }
}
