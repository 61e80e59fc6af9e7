import EventLoop
import HTTPKit
import SyncProtocol

/// One client connection on the HTTP port: reads requests with `HTTPRequestReader`, answers
/// them one at a time in order (pipelined ones wait their turn), and carries the `Session`
/// (through a `LineBridge`) that the API's requests run in, so the connection counts in the
/// server's connection, login and memory budgets like one on the protocol port. The session's
/// deadlines are the connection's: not logged in within the pre-auth timeout (a slowloris, a
/// page left open on the login form) or idle past the idle timeout, it is closed.
final class HTTPConnection {
    let connection: TCPConnection
    unowned let front: HTTPFront
    let isSecure: Bool
    private let reader: HTTPRequestReader
    private var waiting = FIFO<HTTPRequest>()
    private var waitingBytes = 0
    /// The request being answered.
    private(set) var current: HTTPRequest?
    private(set) var bridge: LineBridge!
    /// The response in progress is an event stream: the connection carries it until it ends.
    var stream: EventStream?
    /// No request is read or started any more: the session ended or the client asked to close.
    private var closing = false
    private var inputEnded = false
    private var readingPaused = false

    /// Requests read and waiting for their turn (and their bytes) beyond which reading pauses.
    static let maxWaitingRequests = 16
    static let maxWaitingBytes = 1 << 20
    /// Response bytes the client has not taken beyond which the next request waits.
    static let pauseAtOutputBytes = 1 << 20

    init(_ connection: TCPConnection, front: HTTPFront, limits: HTTPLimits, isSecure: Bool) {
        self.connection = connection
        self.front = front
        self.isSecure = isSecure
        reader = HTTPRequestReader(limits: limits)
        bridge = LineBridge(owner: self)
        front.server.open(bridge)
        connection.onData = { [unowned self] bytes in received(bytes) }
        connection.onEnd = { [unowned self] end in
            if case .failed = end { return self.connection.close() }
            inputEnded = true
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
            bridge.detach()
            front.connectionClosed(self)
        }
        connection.startReading()
    }

    var peerHost: String? { connection.peer?.host }
    var pendingOutputBytes: Int { connection.pendingOutputBytes }
    /// Requests read and not yet answered, the one being read included.
    var heldInputBytes: Int { waitingBytes + reader.bufferedBytes }

    private func received(_ bytes: [UInt8]) {
        guard !closing else { return }
        for request in reader.feed(bytes) {
            waiting.append(request)
            waitingBytes += request.heldBytes
        }
        if !readingPaused, waiting.count >= Self.maxWaitingRequests || waitingBytes >= Self.maxWaitingBytes {
            readingPaused = true
            connection.stopReading()
        }
        serveNext()
    }

    /// Starts the next waiting request once the one before is answered and the client has
    /// taken most of what was sent; a read error is answered in its turn, then the connection
    /// closes.
    private func serveNext() {
        while current == nil, !closing, stream == nil, connection.pendingOutputBytes <= Self.pauseAtOutputBytes {
            guard let request = waiting.popFirst() else {
                if let error = reader.error {
                    closing = true
                    let response = APIResponse.error(status: error.status, code: "BAD_HTTP", message: error.description)
                    connection.write(response.encoded(keepAlive: false))
                    connection.closeAfterWriting()
                } else if inputEnded {
                    connection.closeAfterWriting()
                } else if readingPaused {
                    readingPaused = false
                    connection.startReading()
                }
                return
            }
            waitingBytes -= request.heldBytes
            current = request
            front.api.serve(request, on: self)
        }
    }

    /// Answers the request in progress; the next one starts.
    func respond(_ response: HTTPResponse) {
        guard let request = current else { return }
        let keepAlive = request.keepAlive && !closing && !(reader.isClosed && waiting.isEmpty)
        let bytes = response.encoded(keepAlive: keepAlive, headOnly: request.method == "HEAD")
        front.server.noteQueued(bytes.count)
        connection.write(bytes)
        current = nil
        if !keepAlive {
            closing = true
            connection.closeAfterWriting()
        } else {
            serveNext()
        }
    }

    /// Writes part of a streamed response (its head, chunks); `respond` is not called for it.
    func write(_ text: String) {
        front.server.noteQueued(text.utf8.count)
        connection.write(text)
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
    /// finished by whoever waits for it, then the connection closes.
    func sessionEnded(immediately: Bool) {
        closing = true
        if immediately { return connection.close() }
        stream?.finish(closeConnection: true)
        if current == nil { connection.closeAfterWriting() }
    }

    /// An untagged line that is no request's reply: a subscription's change, a goodbye.
    func untagged(_ line: ServerLine) {
        stream?.untagged(line)
    }

    /// Live `* CHANGE` lines (whole lines) for the event stream.
    func changeLines(_ bytes: ArraySlice<UInt8>) {
        guard let stream else { return }
        stream.send(chunk: front.eventChunks(forChanges: bytes))
    }

    /// Logs the connection's requests in with `token` from here on: a session logged in with
    /// something else is ended (silently) and a fresh one takes its place.
    func freshSession() -> LineBridge {
        bridge.detach()
        bridge = LineBridge(owner: self)
        front.server.open(bridge)
        return bridge
    }
}
