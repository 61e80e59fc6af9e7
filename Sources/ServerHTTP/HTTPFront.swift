import ServerKit
import Foundation
import EventLoop
import HTTPKit
import SyncCore
import SyncProtocol
import TLSKit

/// The HTTP listener (`serve --http-listen`): the API and the console on the server's loop.
/// Its connections take part in the server's budgets (each carries a session); event streams
/// get a heartbeat every `heartbeatMilliseconds`.
public final class HTTPFront: ServerFront {
    /// The server's decisions: the sessions each HTTP connection carries run in it.
    unowned let core: ServerCore
    let api = HTTPAPI()
    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private var heartbeat: (any ScheduledCall)?
    private let tls: TLSContext?
    let limits = HTTPLimits()
    private var dates = HTTPDateCache()

    /// The `Date` header's text for a response made now (the wall clock, read as the log's
    /// and the tokens' times are).
    var dateText: String {
        dates.text(at: core.clock.wallClockSeconds)
    }

    static let heartbeatMilliseconds: UInt64 = 15_000

    /// The last broadcast made into events, and the chunk of those events: a broadcast hands
    /// every stream the same run of changes, so its events are made once, not once a stream.
    private var lastEvents: (run: ChangeRun, range: Range<Int>, chunk: SharedBytes)?

    /// One chunk of `change` events for a broadcast's changes, in one buffer that every
    /// stream's connection sends without a copy of its own.
    func eventChunk(for delivery: ChangeDelivery) -> SharedBytes {
        if let last = lastEvents, last.run === delivery.run, last.range == delivery.range { return last.chunk }
        var events = ""
        for change in delivery.changes { events += EventStream.changeEvent(change) }
        let chunk = SharedBytes(events.isEmpty ? "" : HTTPResponse.chunk(events))
        lastEvents = (delivery.run, delivery.range, chunk)
        return chunk
    }

    /// Serves only what `serve` hands it (bytes in memory) until `listen` is called.
    public init(core: ServerCore, tls: TLSContext? = nil) {
        self.core = core
        self.tls = tls
        heartbeat = core.clock.every(Self.heartbeatMilliseconds) { [unowned self] in
            for connection in connections.values { connection.stream?.heartbeat() }
        }
    }

    public func listen(on loop: EventLoop, at address: SocketAddress, admit: @escaping (TCPConnection, (ByeReason) -> [UInt8]) -> Bool) throws(LoopError) {
        listener = try TCPListener(loop: loop, address: address) { [unowned self] connection in
            guard admit(connection, Self.refusal) else { return }
            serve(connection, isSecure: tls != nil)
        }
    }

    public var address: SocketAddress? { listener?.address }
    var openConnections: Int { connections.count }

    /// Serves HTTP over `connection`: a socket the listener let in, or bytes in memory.
    public func serve(_ connection: ByteConnection, isSecure: Bool = false) {
        let http = HTTPConnection(connection, front: self, limits: limits, isSecure: isSecure)
        connections[ObjectIdentifier(http)] = http
    }

    /// The answer to a connection that is not let in (asked for every connection under TLS,
    /// in case it speaks plaintext: made once).
    static func refusal(_ reason: ByeReason) -> [UInt8] {
        switch reason {
        case .tlsRequired: plaintextRefusal
        case .shutdown: APIResponse.error(status: 503, code: reason.rawValue, message: "the server is shutting down").encoded(keepAlive: false)
        default: APIResponse.error(status: 503, code: reason.rawValue, message: "the server is at its connection limit").encoded(keepAlive: false)
        }
    }

    static let plaintextRefusal = APIResponse.error(status: 400, code: ByeReason.tlsRequired.rawValue, message: "this port speaks HTTPS: use https://")
        .encoded(keepAlive: false)

    func connectionClosed(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Stops listening (shutdown); open connections end with their sessions.
    public func close() {
        listener?.close()
        listener = nil
        heartbeat?.cancel()
        heartbeat = nil
    }
}
