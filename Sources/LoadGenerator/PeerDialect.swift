import Foundation

/// The wire dialects of the peers PlistSync is compared with, reduced to what the put and
/// fan-out shapes need: how to start, write a value, subscribe, publish, and count replies.
public enum PeerDialect: String, Sendable, CaseIterable {
    /// Redis: RESP; SET for durable writes (appendfsync always), PUBLISH/SUBSCRIBE for fan-out.
    case redis
    /// NATS: the text protocol; PUB/SUB, no persistence.
    case nats
    /// PostgreSQL: protocol 3 simple queries; a single-row upsert with synchronous_commit on,
    /// LISTEN/NOTIFY for fan-out. Logs in as user `bench` with trust authentication.
    case postgres

    /// Sent once after connecting.
    var startup: [UInt8] {
        switch self {
        case .redis:
            return []
        case .nats:
            return Array("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n".utf8)
        case .postgres:
            var body: [UInt8] = [0, 3, 0, 0]  // protocol 3.0
            body += Array("user\0bench\0database\0postgres\0\0".utf8)
            return Self.int32(UInt32(body.count + 4)) + body
        }
    }

    /// Reply units (see `ReplyCounter`) that answer `startup`: NATS's INFO line, PostgreSQL's
    /// first ReadyForQuery.
    var startupReplies: Int {
        switch self {
        case .redis: 0
        case .nats, .postgres: 1
        }
    }

    /// A durable write of `value` under `key`; one reply unit answers it.
    func put(key: String, value: String) -> [UInt8] {
        switch self {
        case .postgres: Self.query("INSERT INTO kv (k, v) VALUES ('\(key)', '\(value)') ON CONFLICT (k) DO UPDATE SET v = excluded.v")
        default: Self.resp(["SET", key, value])
        }
    }

    func subscribe(channel: String) -> [UInt8] {
        switch self {
        case .redis: Self.resp(["SUBSCRIBE", channel])
        case .nats: Array("SUB \(channel) 1\r\nPING\r\n".utf8)
        case .postgres: Self.query("LISTEN \(channel)")
        }
    }

    /// Reply units that confirm a subscription (Redis's confirmation is a six-line array).
    var subscribeReplies: Int {
        switch self {
        case .redis: 6
        case .nats, .postgres: 1
        }
    }

    func publish(channel: String, payload: String) -> [UInt8] {
        switch self {
        case .redis: Self.resp(["PUBLISH", channel, payload])
        case .nats: Array("PUB \(channel) \(payload.utf8.count)\r\n\(payload)\r\n".utf8)
        case .postgres: Self.query("NOTIFY \(channel), '\(payload)'")
        }
    }

    /// Reply units one publish gets.
    var repliesPerPublish: Int {
        switch self {
        case .nats: 0
        case .redis, .postgres: 1
        }
    }

    /// A request answered by one reply unit once everything sent before it was handled.
    var barrier: [UInt8] {
        switch self {
        case .redis: Self.resp(["PING"])
        case .nats: Array("PING\r\n".utf8)
        case .postgres: Self.query("SELECT 1")
        }
    }

    func replyCounter() -> ReplyCounter {
        ReplyCounter(readyForQuery: self == .postgres)
    }

    static func resp(_ words: [String]) -> [UInt8] {
        var out = "*\(words.count)\r\n"
        for word in words { out += "$\(word.utf8.count)\r\n\(word)\r\n" }
        return Array(out.utf8)
    }

    static func query(_ sql: String) -> [UInt8] {
        let text = Array(sql.utf8) + [0]
        return [UInt8(ascii: "Q")] + int32(UInt32(text.count + 4)) + text
    }

    static func int32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

/// Counts replies in a byte stream cut at arbitrary points: lines for Redis and NATS,
/// ReadyForQuery messages (`Z`, length 5) for PostgreSQL.
struct ReplyCounter {
    let readyForQuery: Bool
    private var carry: [UInt8] = []
    private static let pattern: [UInt8] = [UInt8(ascii: "Z"), 0, 0, 0, 5]

    init(readyForQuery: Bool) {
        self.readyForQuery = readyForQuery
    }

    mutating func count(_ bytes: [UInt8]) -> Int {
        guard readyForQuery else { return bytes.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } }
        let data = carry + bytes
        var found = 0
        var index = 0
        while index + Self.pattern.count <= data.count {
            if data[index] == Self.pattern[0], Array(data[index..<(index + 5)]) == Self.pattern {
                found += 1
                index += 5
            } else {
                index += 1
            }
        }
        // Fewer than five bytes are left: the start of a pattern the next chunk may finish.
        carry = Array(data[min(index, data.count)...])
        return found
    }
}

/// Finds `"t":<digits>` timestamps in a byte stream cut at arbitrary points: each payload of
/// the fan-out shape carries one, so counting them counts deliveries whatever the protocol.
struct TimestampScanner {
    private var carry: [UInt8] = []
    private static let marker = Array("\"t\":".utf8)

    /// Calls `found` with each complete timestamp in `chunk` (and in what the last chunk left).
    mutating func scan(_ chunk: [UInt8], found: (UInt64) -> Void) {
        let bytes = carry.isEmpty ? chunk : carry + chunk
        var index = 0
        var consumed = 0
        let marker = Self.marker
        while index + marker.count < bytes.count {
            if bytes[index] == marker[0], bytes[index + 1] == marker[1], bytes[index + 2] == marker[2], bytes[index + 3] == marker[3] {
                var cursor = index + marker.count
                var value: UInt64 = 0
                while cursor < bytes.count, bytes[cursor] >= 0x30, bytes[cursor] <= 0x39 {
                    value = value * 10 + UInt64(bytes[cursor] - 0x30)
                    cursor += 1
                }
                guard cursor < bytes.count else { break }
                found(value)
                index = cursor
                consumed = cursor
                continue
            }
            index += 1
        }
        carry = Array(bytes[max(consumed, bytes.count - 40)...])
    }
}
