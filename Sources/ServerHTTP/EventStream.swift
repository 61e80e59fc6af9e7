import ServerKit
import EventLoop
import HTTPKit
import SyncCore
import SyncProtocol

/// A collection's changes as Server-Sent Events: `SUB <collection> SINCE <seq>` in the
/// connection's session, each replayed and live change sent as an event whose `id` is its seq
/// (so a browser's `Last-Event-ID` resumes where it stopped), with the line protocol's order
/// and no gap. Events: `change` (the record, `deleted` for a tombstone), `ready` once the
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

    /// Starts the stream after `Last-Event-ID` (or `?since=`, or 0: the whole collection). A
    /// HEAD gets the stream's head and nothing more.
    static func open(_ exchange: Exchange, collection: String) {
        let resume = exchange.request.header("Last-Event-ID") ?? exchange.target.query["since"] ?? "0"
        guard let since = Int64(resume.trimming(" ")), since >= 0 else {
            return exchange.fail(400, ErrorCode.badRequest.rawValue, "Last-Event-ID (or since) is a seq: a whole number")
        }
        let stream = EventStream(connection: exchange.connection, collection: collection, keepAlive: exchange.request.keepAlive)
        if exchange.request.method == "HEAD" {
            stream.writeHead()
            return exchange.connection.streamEnded(keepAlive: stream.keepAlive)
        }
        exchange.connection.stream = stream
        exchange.bridge.request(.subscribe(collection: collection, since: since), onChanges: { [weak stream] changes in
            stream?.send(chunk: HTTPResponse.chunk(changes.map(Self.changeEvent).joined()))
        }) { [weak stream] answer in
            guard let stream, !stream.ended else { return }
            switch answer {
            case .ok(.subscribed(_, let through), _):
                stream.subscribed = true
                stream.send(event: "ready", id: String(through), data: "{\"seq\":\(through)}")
            case .refused(let error) where error.code == .expired:
                stream.send(event: "expired", data: ValueJSON.encode(.dictionary(["since": .integer(since), "message": .string("changes after \(since) are no longer kept: reload from 0")])))
                stream.finish(closeConnection: false)
            default:
                guard !stream.headWritten else { return stream.finish(closeConnection: true) }
                stream.ended = true
                exchange.connection.stream = nil
                exchange.respond(APIResponse.response(for: answer))
            }
        }
    }

    /// The session's untagged notices while the stream runs.
    func notice(_ notice: ServerNotice) {
        guard !ended else { return }
        switch notice {
        case .renamed(let from, let to) where from == collection:
            collection = to
            send(event: "renamed", data: ValueJSON.encode(.dictionary(["from": .string(from), "to": .string(to)])))
        case .unsubscribedRevoked(let name) where name == collection:
            send(event: "revoked", data: "{}")
            finish(closeConnection: false)
        case .dropped(let name) where name == collection:
            send(event: "dropped", data: "{}")
            finish(closeConnection: false)
        case .bye(let reason, _):
            send(event: "bye", data: ValueJSON.encode(.dictionary(["reason": .string(reason.rawValue)])))
        default:
            break
        }
    }

    /// A comment line that keeps proxies from closing a quiet stream, and a PING that keeps
    /// the session from going idle.
    func heartbeat() {
        guard subscribed, !ended else { return }
        connection.writeBody(HTTPResponse.chunk(": keepalive\n\n"))
        connection.bridge.request(.ping) { _ in }
    }

    /// Ends the response (its last chunk) and the subscription with it.
    func finish(closeConnection: Bool) {
        guard !ended else { return }
        ended = true
        if headWritten { connection.writeBody(HTTPResponse.lastChunk) }
        if subscribed { connection.bridge.request(.unsubscribe(collection: collection)) { _ in } }
        connection.streamEnded(keepAlive: keepAlive && !closeConnection && headWritten)
    }

    /// One event's text.
    static func event(_ name: String, id: String?, data: String) -> String {
        "event: \(name)\n" + (id.map { "id: \($0)\n" } ?? "") + "data: \(data)\n\n"
    }

    /// A change's event: the record (`deleted` for a tombstone) with its seq, which is the id.
    static func changeEvent(_ change: Change) -> String {
        event("change", id: String(change.seq), data: APIResponse.recordJSON(change.state, seq: change.seq))
    }

    private func send(event: String, id: String? = nil, data: String) {
        send(chunk: HTTPResponse.chunk(Self.event(event, id: id, data: data)))
    }

    private func writeHead() {
        headWritten = true
        connection.writeHead(HTTPResponse(status: 200, headers: [
            HTTPHeader("Content-Type", "text/event-stream"), HTTPHeader("Cache-Control", "no-store"),
            HTTPHeader("X-Content-Type-Options", "nosniff"), HTTPHeader("X-Accel-Buffering", "no"),
        ]))
        connection.writeBody(HTTPResponse.chunk(Self.reconnectHint))
    }

    /// Asks EventSource to reconnect half a second after a drop (its default is about 3 s): a
    /// device offline while the server restarted sends what waits as soon as it is back.
    static let reconnectHint = "retry: 500\n\n"

    /// Writes events made already (the head first, once).
    func send(chunk: String) {
        guard !ended, !chunk.isEmpty else { return }
        if !headWritten { writeHead() }
        connection.writeBody(chunk)
    }

    /// Writes a broadcast's events, made once for every stream.
    func send(chunk: SharedBytes) {
        guard !ended, chunk.count > 0 else { return }
        if !headWritten { writeHead() }
        connection.writeBody(chunk)
    }
}
