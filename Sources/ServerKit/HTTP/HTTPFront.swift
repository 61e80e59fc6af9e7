import EventLoop
import HTTPKit
import TLSKit

/// The HTTP listener (`serve --http-listen`): the API and the console on the server's loop.
/// Its connections take part in the server's budgets (each carries a session); event streams
/// get a heartbeat every `heartbeatMilliseconds`.
final class HTTPFront {
    unowned let server: Server
    let api = HTTPAPI()
    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private let heartbeat: LoopTimer
    private let tls: TLSContext?
    let limits = HTTPLimits()

    static let heartbeatMilliseconds: UInt64 = 15_000

    init(server: Server, address: SocketAddress, tls: TLSContext?) throws(LoopError) {
        self.server = server
        self.tls = tls
        heartbeat = LoopTimer(loop: server.loop)
        listener = try TCPListener(loop: server.loop, address: address) { [unowned self] connection in accept(connection) }
        heartbeat.start(after: Self.heartbeatMilliseconds, repeatEvery: Self.heartbeatMilliseconds) { [unowned self] in
            for connection in connections.values { connection.stream?.heartbeat() }
        }
    }

    var address: SocketAddress? { listener?.address }
    var openConnections: Int { connections.count }

    private func accept(_ connection: TCPConnection) {
        guard server.admit(connection, tls: tls, refusal: { reason in
            let response = APIResponse.error(status: 503, code: reason.rawValue, message: reason == .shutdown ? "the server is shutting down" : "the server is at its connection limit")
            return response.encoded(keepAlive: false)
        }) else { return }
        let http = HTTPConnection(connection, front: self, limits: limits, isSecure: tls != nil)
        connections[ObjectIdentifier(http)] = http
    }

    func connectionClosed(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Stops listening (shutdown); open connections end with their sessions.
    func close() {
        listener?.close()
        listener = nil
        heartbeat.close()
    }
}
