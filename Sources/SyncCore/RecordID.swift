#if SIMULATION_MUTATIONS
import SyncProtocol
#endif

/// A record's id (or a file's name or path) compared by its bytes. Swift's `String` equality is
/// canonical equivalence: `Zoë` written with one precomposed scalar equals `Zoë` written with
/// `e` and a combining diaeresis. On Linux those are two files, and on the server two records;
/// every map, set and comparison of ids in the agent goes through this type so they stay two.
public struct RecordID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The id as given (never normalised).
    public let string: String

    public init(_ string: String) { self.string = string }
    public init(stringLiteral value: String) { string = value }

    public var description: String { string }

    public static func == (left: RecordID, right: RecordID) -> Bool {
        #if SIMULATION_MUTATIONS
        if Mutation.active == .namesComparedAsStrings { return left.string == right.string }
        #endif
        var left = left.string
        var right = right.string
        return left.withUTF8 { leftBytes in right.withUTF8 { leftBytes.count == $0.count && leftBytes.elementsEqual($0) } }
    }

    public func hash(into hasher: inout Hasher) {
        #if SIMULATION_MUTATIONS
        if Mutation.active == .namesComparedAsStrings { return hasher.combine(string) }
        #endif
        var bytes = string
        bytes.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)  // never a byte of UTF-8: ends the id
    }

    /// Whether a file system that folds names (Unicode normalisation, case: macOS) takes the two
    /// ids' files for one file.
    public func foldsTogether(with other: RecordID) -> Bool {
        self != other && string.lowercased() == other.string.lowercased()
    }

    /// Byte order, as SQLite's BINARY collation and PostgreSQL's "C" collation sort ids.
    public static func < (left: RecordID, right: RecordID) -> Bool {
        left.string.utf8.lexicographicallyPrecedes(right.string.utf8)
    }
}

extension Array where Element == String {
    /// The ids, each to be compared by its bytes.
    public var recordIDs: [RecordID] { map { RecordID($0) } }
}

extension Array where Element == RecordID {
    /// The ids as strings (for the wire and file names).
    public var strings: [String] { map(\.string) }
}

extension Set where Element == RecordID {
    /// These ids in the order `listed` gives them (each once), then the rest by id.
    public func ordered(by listed: [RecordID]) -> [RecordID] {
        var seen: Set<RecordID> = []
        let placed = listed.filter { contains($0) && seen.insert($0).inserted }
        return placed + subtracting(seen).sorted()
    }
}
