import SyncProtocol

/// A record's state as a client learns it from the server (a CHANGE line or a CONFLICT reply).
public struct RemoteState: Equatable, Sendable {
    public var rev: Int64
    /// Nil for a tombstone.
    public var position: String?
    /// Nil for a tombstone, or for a record that never existed (rev 0, `MISSING`).
    public var fields: Fields?

    public init(rev: Int64, position: String?, fields: Fields?) {
        self.rev = rev
        self.position = position
        self.fields = fields
    }

    public var isLive: Bool { fields != nil }

    /// Reads `<rev> <position> {fields}`, `<rev> - DELETED` or `0 - MISSING`.
    public static func parse(_ words: ArraySlice<String>, payload: Fields?) -> RemoteState? {
        guard let first = words.first, let rev = Int64(first), words.count == 2 || words.count == 3 else { return nil }
        let second = words[words.startIndex + 1]
        if second == "-" { return RemoteState(rev: rev, position: nil, fields: nil) }
        guard let payload else { return nil }
        return RemoteState(rev: rev, position: second, fields: payload)
    }
}

/// What a client can receive, decoded from a `ServerLine`.
public enum ServerEvent: Equatable, Sendable {
    /// `* CHANGE <collection> <seq> <id> <state>`.
    case change(collection: String, seq: Int64, id: String, state: RemoteState)
    /// `* RECORD <collection> <id> <state>` (a LIST line).
    case record(collection: String, id: String, state: RemoteState)
    /// `* COLLECTION <name> <role|none> <seq>`.
    case collection(name: String, role: Role?, seq: Int64)
    /// `* BYE <reason>`: the server is closing the connection.
    case bye(ByeReason)
    /// `* DROPPED <collection>`: the collection was deleted.
    case dropped(String)
    /// `* RENAMED <old> <new>`.
    case renamed(from: String, to: String)
    /// `* TOKEN <id> <created> <last-used|-> this|other <label|->`, a TOKEN LIST line.
    case token(TokenListing)
    /// `TAG OK <reply> [payload]`.
    case ok(tag: String, reply: Reply, payload: Fields?)
    /// `TAG ERR <code> <words…>`; `conflict` is set for `ERR CONFLICT`. A code this client does
    /// not know (a newer server's) reads as `INTERNAL` with the code kept in front of the message.
    case error(tag: String, code: ErrorCode, message: String, conflict: RemoteState?)
    /// An untagged line this client does not know (`* ERR …`, a newer server's line).
    case other(ServerLine)

    public init(_ line: ServerLine) {
        let words = line.words
        guard let tag = line.tag else {
            switch words.first {
            case "CHANGE" where words.count >= 6:
                if let seq = Int64(words[2]), let state = RemoteState.parse(words[4...], payload: line.payload) {
                    self = .change(collection: words[1], seq: seq, id: words[3], state: state)
                    return
                }
            case "RECORD" where words.count >= 5:
                if let state = RemoteState.parse(words[3...], payload: line.payload) {
                    self = .record(collection: words[1], id: words[2], state: state)
                    return
                }
            case "COLLECTION" where words.count == 4:
                if let seq = Int64(words[3]) {
                    self = .collection(name: words[1], role: Role(name: words[2]), seq: seq)
                    return
                }
            case "BYE" where words.count >= 2:
                self = .bye(ByeReason(rawValue: words[1]))
                return
            case "DROPPED" where words.count == 2:
                self = .dropped(words[1])
                return
            case "TOKEN" where (words.count == 6 || (words.count == 7 && words[6] == "session")) && (words[4] == "this" || words[4] == "other"):
                self = .token(TokenListing(id: words[1], created: words[2], lastUsed: words[3] == "-" ? nil : words[3],
                                           isThisConnection: words[4] == "this", label: words[5] == "-" ? nil : words[5],
                                           endsWithBrowser: words.count == 7))
                return
            case "RENAMED" where words.count == 3:
                self = .renamed(from: words[1], to: words[2])
                return
            default:
                break
            }
            self = .other(line)
            return
        }
        if words.first == "OK" {
            self = .ok(tag: tag, reply: Reply(words: Array(words.dropFirst())), payload: line.payload)
        } else {
            let text = words.count > 1 ? words[1] : ErrorCode.internal.rawValue
            var message = words.dropFirst(2).joined(separator: " ")
            let code = ErrorCode(rawValue: text) ?? .internal
            if code.rawValue != text { message = text + " " + message }
            var conflict: RemoteState?
            if code == .conflict, words.count >= 6 { conflict = RemoteState.parse(words[4...], payload: line.payload) }
            self = .error(tag: tag, code: code, message: message, conflict: conflict)
        }
    }
}

/// One device's token as TOKEN LIST shows it (the token itself is never shown again).
public struct TokenListing: Equatable, Sendable {
    public var id: String
    /// When it was made and last used, as ISO 8601 UTC text.
    public var created: String
    public var lastUsed: String?
    /// Whether the connection that asked logged in with it.
    public var isThisConnection: Bool
    public var label: String?
    /// A console login without "keep me signed in".
    public var endsWithBrowser: Bool

    public init(id: String, created: String, lastUsed: String?, isThisConnection: Bool, label: String?, endsWithBrowser: Bool = false) {
        self.endsWithBrowser = endsWithBrowser
        self.id = id
        self.created = created
        self.lastUsed = lastUsed
        self.isThisConnection = isThisConnection
        self.label = label
    }
}
