import SyncCore
import SyncProtocol

/// A record's identity across the mirror.
struct RecordKey: Hashable, CustomStringConvertible {
    var collection: String
    var id: RecordID
    var description: String { "\(collection)/\(id)" }
}

/// Record ids as a plist array of strings, as order files and app-file histories keep them.
extension Array where Element == RecordID {
    /// The ids among `items` (anything else in the array is skipped).
    init(plistArray items: [Value]) {
        self = items.compactMap { if case .string(let id) = $0 { RecordID(id) } else { nil } }
    }

    var plistArray: Value { .array(map { .string($0.string) }) }
}
