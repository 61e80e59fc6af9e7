/// One line from the server as a client reads it: tagged (`TAG OK …`, `TAG ERR …`) or
/// untagged (`* CHANGE …`), split into words with JSON strings decoded and a trailing payload.
public struct ServerLine: Equatable, Sendable {
    /// The request's tag, or nil for an untagged `*` line.
    public var tag: String?
    /// Everything after the tag: `OK`/`ERR`/`CHANGE`… then the arguments.
    public var words: [String]
    /// The trailing JSON object (record fields, STATS, HELLO limits), if any.
    public var payload: Fields?
    /// With `parse(_:keepingPayloadText:)`: the trailing object as the server wrote it, when it
    /// is canonical (then `payload` is nil: it was not decoded).
    public var payloadText: String?

    public init(tag: String?, words: [String], payload: Fields?, payloadText: String? = nil) {
        self.tag = tag
        self.words = words
        self.payload = payload
        self.payloadText = payloadText
    }

    /// The trailing object's fields, decoded from `payloadText` when it was kept as text.
    public var fields: Fields? {
        payload ?? payloadText.flatMap { try? ValueJSON.decodeFields($0.utf8) }
    }

    /// Parses a line without its LF.
    /// Parses a line without its LF; `keepingPayloadText` keeps a canonical payload as its text
    /// (`payloadText`) instead of decoding it, for a reader that passes it on as JSON.
    public static func parse(_ line: some Collection<UInt8>, keepingPayloadText: Bool = false) throws(ProtocolError) -> ServerLine {
        let bytes = Array(line)
        guard let space = bytes.firstIndex(of: 0x20) else {
            throw ProtocolError(.badRequest, "server line has no words")
        }
        let head = String(decoding: bytes[..<space], as: UTF8.self)
        let (words, payload) = try RequestParser.readArguments(bytes, from: space, keepingCanonicalText: keepingPayloadText)
        let tag = head == "*" ? nil : head
        if case .canonical(let text)? = payload { return ServerLine(tag: tag, words: words, payload: nil, payloadText: text) }
        return ServerLine(tag: tag, words: words, payload: payload?.fields)
    }

    /// Parses a line; a tagged line that cannot be read still answers its request, as
    /// `TAG ERR INTERNAL unreadable reply …`, so a client never waits for ever on it. An
    /// unreadable untagged line gives nil: the caller logs and skips it.
    public static func parseAnsweringTag(_ line: some Collection<UInt8>, keepingPayloadText: Bool = false) -> ServerLine? {
        let bytes = Array(line)
        if let parsed = try? parse(bytes, keepingPayloadText: keepingPayloadText) { return parsed }
        guard let space = bytes.firstIndex(of: 0x20), space > 0 else { return nil }
        let head = String(decoding: bytes[..<space], as: UTF8.self)
        guard head != "*" else { return nil }
        let excerpt = String(decoding: bytes.prefix(120), as: UTF8.self).filter { $0 != "\r" && $0 != "\n" }
        return ServerLine(tag: head, words: ["ERR", ErrorCode.internal.rawValue, "unreadable reply from the server: \(excerpt)"], payload: nil)
    }
}
