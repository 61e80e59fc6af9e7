import Foundation

/// The wire dialects of the peers PlistSync is compared with, reduced to what the put and
/// fan-out shapes need: how to write a value, subscribe, publish, and count replies.
public enum PeerDialect: String, Sendable, CaseIterable {
    /// Redis: RESP; SET for durable writes (appendfsync always), PUBLISH/SUBSCRIBE for fan-out.
    case redis
    /// NATS: the text protocol; PUB/SUB, no persistence.
    case nats

    /// Sent once after connecting; it has no reply.
    var handshake: [UInt8] {
        switch self {
        case .redis: []
        case .nats: Array("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n".utf8)
        }
    }

    /// What a subscriber receives once its subscription is in place.
    var subscribedReply: String {
        switch self {
        case .redis: ":1\r\n"
        case .nats: "PONG\r\n"
        }
    }

    /// A durable write of `value` under `key` (Redis only; NATS has no store in this shape).
    func put(key: String, value: String) -> [UInt8] {
        Self.resp(["SET", key, value])
    }

    func subscribe(channel: String) -> [UInt8] {
        switch self {
        case .redis: Self.resp(["SUBSCRIBE", channel])
        case .nats: Array("SUB \(channel) 1\r\nPING\r\n".utf8)
        }
    }

    func publish(channel: String, payload: String) -> [UInt8] {
        switch self {
        case .redis: Self.resp(["PUBLISH", channel, payload])
        case .nats: Array("PUB \(channel) \(payload.utf8.count)\r\n\(payload)\r\n".utf8)
        }
    }

    /// A request whose single-line reply marks that everything sent before it was handled.
    var barrier: [UInt8] {
        switch self {
        case .redis: Self.resp(["PING"])
        case .nats: Array("PING\r\n".utf8)
        }
    }

    static func resp(_ words: [String]) -> [UInt8] {
        var out = "*\(words.count)\r\n"
        for word in words { out += "$\(word.utf8.count)\r\n\(word)\r\n" }
        return Array(out.utf8)
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
