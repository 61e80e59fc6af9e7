import ServerKit
import EventLoop
import HTTPKit
import SyncCore
import SyncProtocol

/// One client connection on the HTTP port: reads requests with `HTTPRequestReader`, answers
/// them one at a time in order (pipelined ones wait their turn), and carries the `Session`
/// (through a `SessionBridge`) that the API's requests run in, so the connection counts in the
/// server's connection, login and memory budgets like one on the protocol port. The session's
/// deadlines are the connection's: not logged in within the pre-auth timeout (a slowloris, a
/// page left open on the login form) or idle past the idle timeout, it is closed.
final class HTTPConnection {
    let connection: ByteConnection
    unowned let front: HTTPFront
    let isSecure: Bool
    private let reader: HTTPRequestReader
    private var waiting = FIFO<HTTPRequest>()
    private var waitingBytes = 0
    /// The request being answered.
    private(set) var current: HTTPRequest?
    private(set) var bridge: SessionBridge!
    /// The response in progress is an event stream: the connection carries it until it ends.
    var stream: EventStream?
    /// No request is read or started any more: the session ended or the client asked to close.
    private var closing = false
    private var input = Input.reading
    /// The client's side of the connection: read, paused while enough waits, or ended.
    private enum Input {
        case reading, paused, ended
    }
    /// The credentials of a held head are being checked (`askForBody`).
    private var askingForBody = false

    /// Requests read and waiting for their turn (and their bytes) beyond which reading pauses.
    static let maxWaitingRequests = 16
    static let maxWaitingBytes = 1 << 20
    /// Response bytes the client has not taken beyond which the next request waits.
    static let pauseAtOutputBytes = 1 << 20
    /// Before login a connection holds about what one on the line port does (PROTOCOL.md §7,
    /// ~100 KiB): a body of at most 16 KiB (a login's JSON is a few hundred bytes) and 64 KiB of
    /// requests waiting. A larger body waits unread until the credentials of its request's head
    /// log the connection in (`askForBody`).
    static let preAuthMaxBodyBytes = 16 << 10
    static let preAuthMaxWaitingBytes = 64 << 10

    init(_ connection: ByteConnection, front: HTTPFront, limits: HTTPLimits, isSecure: Bool) {
        self.connection = connection
        self.front = front
        self.isSecure = isSecure
        reader = HTTPRequestReader(limits: limits)
        bridge = SessionBridge(owner: self)
        front.core.open(bridge).front = .http
        connection.onData = { [unowned self] bytes in received(bytes) }
        connection.onEnd = { [unowned self] end in
            if case .failed = end { return self.connection.close() }
            input = .ended
            // An event stream has no end but the client's: it went away.
            stream?.finish(closeConnection: true)
            if current == nil, waiting.isEmpty { self.connection.closeAfterWriting() }
        }
        connection.onDrain = { [unowned self] in
            bridge.session?.outputDrained()
            serveNext()
        }
        connection.onClose = { [unowned self] in
            stream = nil
            bridge.connectionClosed()
            front.connectionClosed(self)
        }
        connection.startReading()
    }

    var peerHost: String? { connection.peerHost }
    var pendingOutputBytes: Int { connection.pendingOutputBytes }
    /// Requests read and not yet answered, the one being read included.
    var heldInputBytes: Int { waitingBytes + reader.bufferedBytes }

    private func received(_ bytes: [UInt8]) {
        guard !closing else { return }
        let loggedIn = bridge.isLoggedIn
        reader.bodyLimit = loggedIn ? reader.limits.maxBodyBytes : min(Self.preAuthMaxBodyBytes, reader.limits.maxBodyBytes)
        reader.holdsLargeBodies = !loggedIn
        take(reader.feed(bytes))
        let maxWaitingBytes = loggedIn ? Self.maxWaitingBytes : Self.preAuthMaxWaitingBytes
        if input == .reading, waiting.count >= Self.maxWaitingRequests || waitingBytes >= maxWaitingBytes || reader.heldHead != nil {
            input = .paused
            connection.stopReading()
        }
        serveNext()
    }

    private func take(_ requests: [HTTPRequest]) {
        for request in requests {
            waiting.append(request)
            waitingBytes += request.heldBytes
        }
    }

    /// The reader holds the head of a request with a body larger than a connection not logged
    /// in may send: its credentials log the connection in first, then the body is read; none
    /// (or wrong ones) and it is refused and the connection closed, with no byte of it read.
    private func askForBody(_ head: HTTPRequest) {
        guard !askingForBody else { return }
        guard !bridge.isLoggedIn else { return bodyAllowed() }
        guard let token = head.bearerToken ?? head.cookie(HTTPAPI.cookieName), !token.isEmpty else {
            return closeWith(APIResponse.error(
                status: 413, code: ErrorCode.tooLarge.rawValue,
                message: "a body over \(Self.preAuthMaxBodyBytes / 1024) KiB needs a logged-in connection: send Authorization: Bearer <token>"))
        }
        askingForBody = true
        bridge.request(.authToken(token), bytes: token.utf8.count) { [self] answer in
            askingForBody = false
            guard case .ok = answer else { return closeWith(APIResponse.response(for: answer)) }
            bridge.token = token
            bodyAllowed()
        }
    }

    private func bodyAllowed() {
        take(reader.takeHeldBody(upTo: reader.limits.maxBodyBytes))
        serveNext()
    }

    /// Answers outside any request's turn (the bytes were not a request, or a body was
    /// refused) and closes once it is sent.
    private func closeWith(_ response: HTTPResponse) {
        closing = true
        connection.write(response.encoded(keepAlive: false, date: front.dateText))
        connection.closeAfterWriting()
    }

    /// Starts the next waiting request once the one before is answered and the client has
    /// taken most of what was sent; a read error is answered in its turn, then the connection
    /// closes.
    private func serveNext() {
        while current == nil, !closing, stream == nil, connection.pendingOutputBytes <= Self.pauseAtOutputBytes {
            guard let request = waiting.popFirst() else {
                if let error = reader.error {
                    closeWith(APIResponse.error(status: error.status, code: "BAD_HTTP", message: error.description))
                } else if let head = reader.heldHead {
                    askForBody(head)
                } else if input == .ended {
                    connection.closeAfterWriting()
                } else if input == .paused {
                    input = .reading
                    connection.startReading()
                }
                return
            }
            waitingBytes -= request.heldBytes
            current = request
            front.api.serve(request, on: self)
        }
    }

    /// The response in progress is the connection's last (its session is ending, as at
    /// logout): it goes with `Connection: close`, and requests after it are not started.
    func closeAfterResponding() {
        closing = true
    }

    /// Whether the response in progress goes without its body (a HEAD request).
    private var headOnly: Bool { current?.method == "HEAD" }

    /// Answers the request in progress; the next one starts.
    func respond(_ response: HTTPResponse) {
        guard let request = current else { return }
        let keepAlive = request.keepAlive && !closing && !(reader.isClosed && waiting.isEmpty)
        let bytes = response.encoded(keepAlive: keepAlive, headOnly: headOnly, date: front.dateText)
        front.core.noteQueued(bytes.count)
        connection.write(bytes)
        current = nil
        if !keepAlive {
            closing = true
            connection.closeAfterWriting()
        } else {
            serveNext()
        }
    }

    /// Starts a streamed response (a listing, an event stream): its head, the body to follow
    /// in chunks (`writeBody`) until `streamEnded`.
    func writeHead(_ response: HTTPResponse) {
        let head = response.head(keepAlive: current?.keepAlive ?? false, chunked: true, date: front.dateText)
        front.core.noteQueued(head.utf8.count)
        connection.write(head)
    }

    /// Writes part of a streamed response's body (chunks); nothing for a HEAD request.
    func writeBody(_ text: String) {
        guard !headOnly else { return }
        front.core.noteQueued(text.utf8.count)
        connection.write(text)
    }

    /// Writes part of a streamed response's body made once for many connections.
    func writeBody(_ shared: SharedBytes) {
        guard !headOnly else { return }
        front.core.noteQueued(shared.count)
        connection.write(shared, range: 0..<shared.count)
    }

    /// The streamed response in progress has ended (its last chunk written).
    func streamEnded(keepAlive: Bool) {
        stream = nil
        current = nil
        if !keepAlive || closing {
            closing = true
            connection.closeAfterWriting()
        } else {
            serveNext()
        }
    }

    /// The session ended (revoked, idle, shed, shutting down): the response in progress is
    /// finished by whoever waits for it, then the connection closes; `immediately`, at once
    /// with what it holds let go (the server's memory budget wants it back).
    func sessionEnded(immediately: Bool) {
        closing = true
        if immediately { return connection.close() }
        stream?.finish(closeConnection: true)
        if current == nil { connection.closeAfterWriting() }
    }

    /// An untagged notice that belongs to no request (a rename, a drop, a goodbye).
    func notice(_ notice: ServerNotice) {
        stream?.notice(notice)
    }

    /// A broadcast's changes for the event stream.
    func deliver(_ delivery: ChangeDelivery) {
        stream?.send(chunk: front.eventChunk(for: delivery))
    }

    /// Logs the connection's requests in with `token` from here on: a session logged in with
    /// something else is ended (silently) and a fresh one takes its place.
    func freshSession() -> SessionBridge {
        bridge.detach()
        bridge = SessionBridge(owner: self)
        front.core.open(bridge).front = .http
        return bridge
    }
}
