/// One line from the server as a client reads it: tagged (`TAG OK …`, `TAG ERR …`) or
/// untagged (`* CHANGE …`), split into words with JSON strings decoded and a trailing payload.
public struct ServerLine: Equatable, Sendable {
    /// The request's tag, or nil for an untagged `*` line.
    public var tag: String?
    /// Everything after the tag: `OK`/`ERR`/`CHANGE`… then the arguments.
    public var words: [String]
    /// The trailing JSON object (record fields, STATS, HELLO limits), if any.
    public var payload: Fields?

    public init(tag: String?, words: [String], payload: Fields?) {
        self.tag = tag
        self.words = words
        self.payload = payload
    }

    /// Parses a line without its LF.
    public static func parse(_ line: some Collection<UInt8>) throws(ProtocolError) -> ServerLine {
        let bytes = Array(line)
        guard let space = bytes.firstIndex(of: 0x20) else {
            throw ProtocolError(.badRequest, "server line has no words")
        }
        let head = String(decoding: bytes[..<space], as: UTF8.self)
        let (words, payload) = try RequestParser.readArguments(bytes, from: space)
        return ServerLine(tag: head == "*" ? nil : head, words: words, payload: payload?.fields)
    }
}
