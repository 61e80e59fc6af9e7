import SyncCore

/// A record's identity across the mirror.
struct RecordKey: Hashable, CustomStringConvertible {
    var collection: String
    var id: RecordID
    var description: String { "\(collection)/\(id)" }
}
