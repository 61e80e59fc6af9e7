import HTTPKit
import SyncProtocol

/// A collection's changes as Server-Sent Events: `SUB <collection> SINCE <seq>` in the
/// connection's session, each replayed and live `* CHANGE` line sent as an event whose `id` is
/// its seq (so a browser's `Last-Event-ID` resumes where it stopped), with the line protocol's
/// order and no gap. Events: `change` (the record, `deleted` for a tombstone), `ready` once the
/// replay is done, then `renamed`; the stream ends after `expired` (the seq is older than the
/// kept tombstones: start again from 0), `revoked` (read access ended), `dropped`, or `bye`
/// (the server closed the connection: idle, slow reader, shutdown).
final class EventStream {
    unowned let connection: HTTPConnection
    private var collection: String
    private let keepAlive: Bool
    private var headWritten = false
    private var subscribed = false
    private var ended = false

    private init(connection: HTTPConnection, collection: String, keepAlive: Bool) {
        self.connection = connection
        self.collection = collection
        self.keepAlive = keepAlive
    }

    /// Starts the stream after `Last-Event-ID` (or `?since=`, or 0: the whole collection).
    static func open(_ exchange: Exchange, collection: String) {
        let resume = exchange.request.header("Last-Event-ID") ?? exchange.target.query["since"] ?? "0"
        guard let since = Int64(resume.trimming(" ")), since >= 0 else {
            return exchange.fail(400, ErrorCode.badRequest.rawValue, "Last-Event-ID (or since) is a seq: a whole number")
        }
        let stream = EventStream(connection: exchange.connection, collection: collection, keepAlive: exchange.request.keepAlive)
        exchange.connection.stream = stream
        exchange.bridge.request("SUB \(ResponseLine.argument(collection)) SINCE \(since)") { [weak stream] reply in
            guard let stream, !stream.ended else { return }
            if reply.isOK {
                stream.subscribed = true
                let through = reply.words.count > 3 ? reply.words[3] : "0"
                stream.send(event: "ready", id: through, data: "{\"seq\":\(Int64(through) ?? 0)}")
            } else if reply.errorCode == .expired {
                stream.send(event: "expired", data: ValueJSON.encode(.dictionary(["since": .integer(since), "message": .string("changes after \(since) are no longer kept: reload from 0")])))
                stream.finish(closeConnection: false)
            } else if !stream.headWritten {
                stream.ended = true
                exchange.connection.stream = nil
                exchange.respond(APIResponse.error(reply))
            } else {
                stream.finish(closeConnection: true)
            }
        }
    }

    /// The session's untagged lines while the stream runs.
    func untagged(_ line: ServerLine) {
        guard !ended, let kind = line.words.first else { return }
        let words = line.words
        switch kind {
        case "CHANGE" where words.count >= 6:
            guard let record = APIResponse.recordText(line, from: 3, seq: words[2]) else { return }
            send(event: "change", id: words[2], data: record)
        case "RENAMED" where words.count >= 3 && words[1] == collection:
            collection = words[2]
            send(event: "renamed", data: ValueJSON.encode(.dictionary(["from": .string(words[1]), "to": .string(words[2])])))
        case "UNSUB" where words.count >= 2 && words[1] == collection:
            send(event: "revoked", data: "{}")
            finish(closeConnection: false)
        case "DROPPED" where words.count >= 2 && words[1] == collection:
            send(event: "dropped", data: "{}")
            finish(closeConnection: false)
        case "BYE" where words.count >= 2:
            send(event: "bye", data: ValueJSON.encode(.dictionary(["reason": .string(words[1])])))
        default:
            break
        }
    }

    /// A comment line that keeps proxies from closing a quiet stream, and a PING that keeps
    /// the session from going idle.
    func heartbeat() {
        guard subscribed, !ended else { return }
        connection.write(HTTPResponse.chunk(": keepalive\n\n"))
        connection.bridge.request("PING") { _ in }
    }

    /// Ends the response (its last chunk) and the subscription with it.
    func finish(closeConnection: Bool) {
        guard !ended else { return }
        ended = true
        if headWritten { connection.write(HTTPResponse.lastChunk) }
        if subscribed { connection.bridge.request("UNSUB \(ResponseLine.argument(collection))") { _ in } }
        connection.streamEnded(keepAlive: keepAlive && !closeConnection && headWritten)
    }

    /// One event's text.
    static func event(_ name: String, id: String?, data: String) -> String {
        "event: \(name)\n" + (id.map { "id: \($0)\n" } ?? "") + "data: \(data)\n\n"
    }

    private func send(event: String, id: String? = nil, data: String) {
        send(chunk: HTTPResponse.chunk(Self.event(event, id: id, data: data)))
    }

    /// Writes an event made already (the head first, once).
    func send(chunk: String) {
        guard !ended, !chunk.isEmpty else { return }
        if !headWritten {
            headWritten = true
            let head = HTTPResponse(status: 200, headers: [
                HTTPHeader("Content-Type", "text/event-stream"), HTTPHeader("Cache-Control", "no-store"),
                HTTPHeader("X-Content-Type-Options", "nosniff"), HTTPHeader("X-Accel-Buffering", "no"),
            ])
            connection.write(head.head(keepAlive: keepAlive, chunked: true))
        }
        connection.write(chunk)
    }
}
