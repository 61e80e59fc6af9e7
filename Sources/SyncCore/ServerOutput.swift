import SyncProtocol

/// What a server session sends its client, as a value: a socket writes its `text`, and the
/// HTTP API reads the values themselves (no reply text made and parsed back, no words read by
/// position). The one encoder of every reply and notice line; `ServerEvent` is its reader,
/// round-trip tested.
public enum ServerOutput: Equatable, Sendable {
    /// `TAG OK <reply> [payload]`; `payload` is canonical JSON (a record's fields, STATS).
    case ok(tag: String, Reply, payload: String? = nil)
    /// `TAG ERR <code> <message>`, or `* ERR …` for a line whose tag could not be read.
    case error(tag: String?, ProtocolError)
    /// `TAG ERR CONFLICT <collection> <id> <state>`: the record's current state, nil when it
    /// never existed (`0 - MISSING`).
    case conflict(tag: String, collection: String, id: String, current: RecordState?)
    /// Untagged lines: listings (`* COLLECTION`, `* MEMBER`, `* TOKEN`, a LIST page's
    /// `* RECORD`s), live notices, `* BYE`.
    case notices([ServerNotice])
    /// A page of a SUB replay: `* CHANGE` lines in seq order.
    case changes([Change])
    /// A LIST or SUB replay page already written as lines (line connections only).
    case lines(EncodedLines)

    /// The lines, each with its LF.
    public var text: String {
        switch self {
        case .ok(let tag, let reply, let payload): return reply.line(tag, payload: payload)
        case .error(let tag?, let error): return ResponseLine.error(tag, error)
        case .error(nil, let error): return ResponseLine.untagged("ERR", error.code.rawValue, ResponseLine.sanitized(error.message))
        case .conflict(let tag, let collection, let id, let current):
            return "\(tag) ERR CONFLICT \(collection) \(ResponseLine.argument(id)) \(current?.wireTail ?? "0 - MISSING")\n"
        case .notices(let notices):
            var text = ""
            for notice in notices { text += notice.line }
            return text
        case .changes(let changes):
            var text = ""
            for change in changes { text += change.line }
            return text
        case .lines(let lines):
            return String(decoding: lines.bytes, as: UTF8.self)
        }
    }

    /// Roughly the bytes `text` takes, without making it (the memory budget's estimate).
    public var approximateBytes: Int {
        switch self {
        case .ok(let tag, _, let payload): 48 + tag.utf8.count + (payload?.utf8.count ?? 0)
        case .error(_, let error): 48 + error.message.utf8.count
        case .conflict(_, _, _, let current): 96 + (current?.storedFieldBytes ?? 0)
        case .notices(let notices): notices.reduce(0) { $0 + $1.approximateBytes }
        case .changes(let changes): changes.reduce(0) { $0 + 64 + $1.state.id.utf8.count + $1.state.storedFieldBytes }
        case .lines(let lines): lines.bytes.count
        }
    }
}

extension ServerNotice {
    /// Roughly the bytes of `line`.
    var approximateBytes: Int {
        if case .record(_, let state) = self { return 64 + state.id.utf8.count + state.storedFieldBytes }
        if case .version(_, let id, let version) = self { return 64 + id.utf8.count + version.fieldsJSON.utf8.count }
        if case .logged(let change) = self { return 96 + change.state.id.utf8.count + change.state.storedFieldBytes }
        if case .revertStep(_, let state) = self { return 64 + state.id.utf8.count + state.storedFieldBytes }
        return 64
    }
}
