/// LIST's forms: the whole list, a page of it, and either as it stood at a seq.
extension CommandParser {
    static func list(_ args: [String], usage: String) throws(ProtocolError) -> Command {
        let name = try collection(args[0], orConflicts: true)
        var rest = Array(args.dropFirst())
        var atText: String?
        if rest.count >= 2, rest[0].uppercased() == "AT" {
            atText = rest[1]
            rest.removeFirst(2)
        }
        // The page's words: none (the whole list), LIMIT n, or AFTER <position> <id> LIMIT n.
        let paged: Bool
        let cursorWords: (position: String, id: String)?
        switch rest.count {
        case 0: (paged, cursorWords) = (false, nil)
        case 2 where rest[0].uppercased() == "LIMIT": (paged, cursorWords) = (true, nil)
        case 5 where rest[0].uppercased() == "AFTER" && rest[3].uppercased() == "LIMIT": (paged, cursorWords) = (true, (rest[1], rest[2]))
        default: throw ProtocolError(.badRequest, "usage: \(usage)")
        }
        let at = try atText.map { text throws(ProtocolError) in try Self.seq(text) }
        guard paged else { return at.map { .listAt(collection: name, seq: $0) } ?? .list(collection: name) }
        let after = try cursorWords.map { words throws(ProtocolError) in try cursor(words.position, words.id) }
        let limit = try pageLimit(rest[rest.count - 1])
        if let at { return .listPageAt(collection: name, seq: at, after: after, limit: limit) }
        return .listPage(collection: name, after: after, limit: limit)
    }

    /// The most records one LIST page may ask for.
    public static let maxPageRecords = 1000

    static func pageLimit(_ text: String) throws(ProtocolError) -> Int {
        guard let limit = Int(text), (1...maxPageRecords).contains(limit) else {
            throw ProtocolError(.badRequest, "LIMIT is a whole number from 1 to \(maxPageRecords)")
        }
        return limit
    }

    /// A place to list after: a position of `[0-9A-Za-z]` (any, not only a key in use) and a
    /// record id (an id, not a conflict copy's: those sort by the same rules).
    static func cursor(_ position: String, _ id: String) throws(ProtocolError) -> RecordCursor {
        guard !position.isEmpty, position.utf8.count <= 255, position.utf8.allSatisfy(Self.isPositionDigit) else {
            throw ProtocolError(.badRequest, "AFTER takes a position of [0-9A-Za-z] and a record id")
        }
        guard !id.isEmpty, id.utf8.count <= 255, !id.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw ProtocolError(.badRequest, "AFTER takes a position of [0-9A-Za-z] and a record id")
        }
        return RecordCursor(position: position, id: id)
    }

    /// `[0-9A-Za-z]`: what position keys are made of.
    private static func isPositionDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): true
        default: false
        }
    }
}
