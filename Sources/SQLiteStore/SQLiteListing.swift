import SQLiteKit
import SyncCore

/// A LIST read from SQLite a page at a time: a cursor on a connection of its own, holding one
/// read snapshot (WAL: writers go on) until the last page or until it is let go.
public final class SQLiteListing: RecordListing, @unchecked Sendable {
    public let seq: Int64
    private let cursor: SQLiteCursor

    init(cursor: SQLiteCursor, seq: Int64) {
        self.cursor = cursor
        self.seq = seq
    }

    public func next(_ limit: Int) throws(StoreFailure) -> [RecordState] {
        do {
            return try cursor.next(limit) { row in RecordReader.decodeState(row, id: 0, rev: 1, position: 2, fields: 3) }
        } catch {
            throw StoreFailure(.failed, error.description)
        }
    }
}
