import PostgresKit
import SyncCore

extension PGRows {
    /// The record state in row `index`, its columns at these positions (fields NULL: a tombstone).
    func recordState(_ index: Int, id: Int, rev: Int, position: Int, fields: Int) -> RecordState {
        let body: RecordState.Body = self[index, fields].map { .live(position: self[index, position] ?? "", fieldsJSON: $0) } ?? .deleted
        return RecordState(id: self[index, id] ?? "", rev: integer(index, rev), body: body)
    }
}
