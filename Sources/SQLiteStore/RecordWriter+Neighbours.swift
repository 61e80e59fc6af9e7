import SQLiteKit
import SyncCore
import SyncProtocol

extension RecordWriter {
    /// A MOVE's questions about the other live records, in SQLite.
    struct Neighbours: NeighbourLookup {
        let writer: RecordWriter
        let collection: String
        let moving: String

        private func key(_ condition: String, _ order: String, _ bound: String? = nil) throws(StoreError) -> String? {
            let db = writer.db
            let sql = "SELECT position FROM records WHERE collection = ? AND position IS NOT NULL AND id != ? \(condition) ORDER BY \(order) LIMIT 1"
            if let bound { return try db.queryFirst(sql, .text(collection), .text(moving), .text(bound)) { $0.text(0) } ?? nil }
            return try db.queryFirst(sql, .text(collection), .text(moving)) { $0.text(0) } ?? nil
        }

        func firstKey() throws(StoreError) -> String? { try key("", "position, id") }
        func lastKey() throws(StoreError) -> String? { try key("", "position DESC, id DESC") }
        func key(below key: String) throws(StoreError) -> String? { try self.key("AND position < ?", "position DESC", key) }
        func key(above key: String) throws(StoreError) -> String? { try self.key("AND position > ?", "position", key) }
        func key(of id: String) throws(StoreError) -> String? {
            guard let state = try writer.state(collection, id), case .live(let position, _) = state.body else { return nil }
            return position
        }

        func records(atOrBelow key: String, limit: Int) throws(StoreError) -> [RecordState] {
            try records("position <= ?", "position DESC, id DESC", key, limit)
        }

        func records(atOrAbove key: String, limit: Int) throws(StoreError) -> [RecordState] {
            try records("position >= ?", "position, id", key, limit)
        }

        /// Rows in order, each with its waiting edit laid over (a re-key writes their fields).
        private func records(_ condition: String, _ order: String, _ key: String, _ limit: Int) throws(StoreError) -> [RecordState] {
            let rows = try writer.db.query(
                "SELECT id, rev, position, fields FROM records WHERE collection = ? AND position IS NOT NULL AND id != ? AND \(condition) ORDER BY \(order) LIMIT ?",
                .text(collection), .text(moving), .text(key), .integer(Int64(limit))) { row in
                RecordReader.decodeState(row, id: 0, rev: 1, position: 2, fields: 3)
            }
            return rows.map { row in writer.waitingEdit(collection, row.id)?.state(id: row.id) ?? row }
        }
    }
}
