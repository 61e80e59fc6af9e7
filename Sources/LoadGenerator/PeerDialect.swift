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
    /// etcd v3 through its JSON gateway (HTTP/1.1 keep-alive): `/v3/kv/put`, answered once
    /// raft-committed and fsynced; `/v3/watch` streams for fan-out.
    case etcd

    /// Sent once after connecting.
    var startup: [UInt8] {
        switch self {
        case .redis, .etcd:
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
        case .redis, .etcd: 0
        case .nats, .postgres: 1
        }
    }

    /// A durable write of `value` under `key`; one reply unit answers it.
    func put(key: String, value: String) -> [UInt8] {
        switch self {
        case .postgres: Self.query("INSERT INTO kv (k, v) VALUES ('\(key)', '\(value)') ON CONFLICT (k) DO UPDATE SET v = excluded.v")
        case .etcd: Self.http("/v3/kv/put", "{\"key\":\"\(Self.base64("bench/put/" + key))\",\"value\":\"\(Self.base64(value))\"}")
        default: Self.resp(["SET", key, value])
        }
    }

    func subscribe(channel: String) -> [UInt8] {
        switch self {
        case .redis: Self.resp(["SUBSCRIBE", channel])
        case .nats: Array("SUB \(channel) 1\r\nPING\r\n".utf8)
        case .postgres: Self.query("LISTEN \(channel)")
        case .etcd:
            Self.http("/v3/watch", "{\"create_request\":{\"key\":\"\(Self.base64(channel + "/"))\",\"range_end\":\"\(Self.base64(channel + "0"))\"}}")
        }
    }

    /// Reply units that confirm a subscription (Redis's confirmation is a six-line array).
    var subscribeReplies: Int {
        switch self {
        case .redis: 6
        case .nats, .postgres, .etcd: 1
        }
    }

    func publish(channel: String, payload: String) -> [UInt8] {
        switch self {
        case .redis: Self.resp(["PUBLISH", channel, payload])
        case .nats: Array("PUB \(channel) \(payload.utf8.count)\r\n\(payload)\r\n".utf8)
        case .postgres: Self.query("NOTIFY \(channel), '\(payload)'")
        case .etcd: Self.http("/v3/kv/put", "{\"key\":\"\(Self.base64(channel + "/k"))\",\"value\":\"\(Self.base64(payload))\"}")
        }
    }

    /// Reply units one publish gets.
    var repliesPerPublish: Int {
        switch self {
        case .nats: 0
        case .redis, .postgres, .etcd: 1
        }
    }

    /// A request answered by one reply unit once everything sent before it was handled.
    var barrier: [UInt8] {
        switch self {
        case .redis: Self.resp(["PING"])
        case .nats: Array("PING\r\n".utf8)
        case .postgres: Self.query("SELECT 1")
        case .etcd: Self.http("/v3/kv/range", "{\"key\":\"\(Self.base64("bench/none"))\"}")
        }
    }

    func replyCounter() -> ReplyCounter {
        switch self {
        case .redis, .nats: ReplyCounter()
        case .postgres: ReplyCounter(marker: [UInt8(ascii: "Z"), 0, 0, 0, 5])
        case .etcd: ReplyCounter(marker: Array("HTTP/1.1 ".utf8))
        }
    }

    /// Counts what confirms `subscribe`: etcd's watch stream answers with `"created":true`.
    func subscriptionCounter() -> ReplyCounter {
        self == .etcd ? ReplyCounter(marker: Array("\"created\":true".utf8)) : replyCounter()
    }

    /// What a subscriber's bytes carry: the payloads as published, except etcd, whose watch
    /// events carry them base64-encoded.
    func payloadDecoder() -> (([UInt8]) -> [UInt8])? {
        guard self == .etcd else { return nil }
        var values = Base64ValueExtractor()
        return { values.decode($0) }
    }

    static func resp(_ words: [String]) -> [UInt8] {
        var out = "*\(words.count)\r\n"
        for word in words { out += "$\(word.utf8.count)\r\n\(word)\r\n" }
        return Array(out.utf8)
    }

    static func http(_ path: String, _ body: String) -> [UInt8] {
        Array("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }

    static func base64(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
    }

    static func query(_ sql: String) -> [UInt8] {
        let text = Array(sql.utf8) + [0]
        return [UInt8(ascii: "Q")] + int32(UInt32(text.count + 4)) + text
    }

    static func int32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
