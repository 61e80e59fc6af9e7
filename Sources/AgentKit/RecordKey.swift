/// A record's identity across the mirror.
struct RecordKey: Hashable, CustomStringConvertible {
    var collection: String
    var id: String
    var description: String { "\(collection)/\(id)" }
}
