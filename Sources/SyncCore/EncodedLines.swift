import SyncProtocol

/// Lines of a LIST page (`* RECORD`) or a SUB replay page (`* CHANGE`), already written as
/// the bytes a line connection sends: a store can write them straight from its rows, with no
/// value made of each record (the bulk reads' cost is then the store's and the socket's).
public struct EncodedLines: Equatable, Sendable {
    public var bytes: [UInt8]
    /// How many lines.
    public var count: Int
    /// The seq of the last `* CHANGE` line (nil for `* RECORD`s, or none).
    public var lastSeq: Int64?

    public init(bytes: [UInt8] = [], count: Int = 0, lastSeq: Int64? = nil) {
        (self.bytes, self.count, self.lastSeq) = (bytes, count, lastSeq)
    }

    /// `* RECORD <collection> ` or `* CHANGE <collection> `: what every line of the page starts with.
    public static func prefix(_ verb: String, _ collection: String) -> [UInt8] {
        Array("* \(verb) \(collection) ".utf8)
    }

    /// Whether `id` goes on a line as it is (else it is quoted: `ResponseLine.argument`),
    /// asked of its first byte and of every byte.
    public static func idIsAtom(first: UInt8) -> Bool { RequestParser.isAtomByte(first) && first != UInt8(ascii: "{") }
    public static func idIsAtom(byte: UInt8) -> Bool { RequestParser.isAtomByte(byte) }

    /// Appends `<rev> ` in decimal.
    public static func appendNumber(_ number: Int64, to bytes: inout [UInt8]) {
        if number >= 0, number < 10 { return bytes.append(UInt8(ascii: "0") + UInt8(number)) }
        bytes.append(contentsOf: String(number).utf8)
    }

    public static let deleted = Array("- DELETED".utf8)

    /// The same lines made from values (a store without its own encoder).
    public init(records: [RecordState], collection: String) {
        var bytes: [UInt8] = []
        for state in records { bytes.append(contentsOf: ServerNotice.record(collection: collection, state: state).line.utf8) }
        self.init(bytes: bytes, count: records.count)
    }

    public init(changes: [Change]) {
        var bytes: [UInt8] = []
        for change in changes { bytes.append(contentsOf: change.line.utf8) }
        self.init(bytes: bytes, count: changes.count, lastSeq: changes.last?.seq)
    }
}
