import EventLoop
import SyncCore
import SyncProtocol
import TLSKit

/// `plistsync serve`: the process around a `ServerCore` on one libuv loop: the protocol,
/// plaintext, metrics and HTTP listeners, TLS on accepted sockets, the signals, and the watch
/// on the control folder that account commands touch.
///
/// Loop-thread object. `start()` binds and returns; `EventLoop.run()` serves until `shutdown()`
/// (SIGINT/SIGTERM) has drained the in-flight commits and said `* BYE SHUTDOWN` to everyone.
public final class Server {
    public let configuration: ServerConfiguration
    let loop: EventLoop
    /// The server's decisions, on this loop's clock and threads.
    public let core: ServerCore
    let handles = ServerHandles()
    /// Makes the HTTP front for `--http-listen` (none: the option is refused at start).
    private let makeHTTPFront: ((ServerCore) -> any ServerFront)?

    /// Serves `store`; nothing listens until `start()`. `httpFront` makes the front that
    /// `--http-listen` serves (`ServerHTTP.HTTPFront`).
    public init(
        configuration: ServerConfiguration, store: ServerStore, loop: EventLoop, httpFront: ((ServerCore) -> any ServerFront)? = nil
    ) throws(StoreFailure) {
        self.configuration = configuration
        self.loop = loop
        makeHTTPFront = httpFront
        let host = LoopHost(loop: loop)
        core = try ServerCore(configuration: configuration, store: store, clock: host, work: host)
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var boundAddress: SocketAddress? { handles.listener?.address }
    /// The HTTP listener's address, when there is one.
    public var httpAddress: SocketAddress? { handles.http?.address }

    /// The answer, in plaintext, to a client that speaks plain text on the TLS port.
    static let plaintextRefusal = Array(ServerNotice.bye(.tlsRequired, detail: "this port speaks TLS: connect with --tls").line.utf8)

    /// Binds the listeners, installs signal handlers (unless `stopOnSignals` is false: a server
    /// run inside a test is stopped by `shutdown()`) and starts the core.
    public func start(stopOnSignals: Bool = true, onStopped: @escaping () -> Void = {}) throws(LoopError) {
        let listener = try TCPListener(loop: loop, address: configuration.listen) { [unowned self] connection in
            accept(connection, tls: configuration.tls)
        }
        let metrics = try configuration.metricsListen.map { address throws(LoopError) in
            try MetricsEndpoint(loop: loop, clock: core.clock, address: address) { [unowned self] in core.metricsText() }
        }
        let http = try configuration.httpListen.map { address throws(LoopError) -> any ServerFront in
            guard let makeHTTPFront else { throw LoopError.invalid("--http-listen (this server was made without an HTTP front)") }
            let front = makeHTTPFront(core)
            try front.listen(on: loop, at: address) { [unowned self] connection, refusal in admit(connection, tls: configuration.tls, refusal: refusal) }
            return front
        }
        let plaintextListener = try configuration.plaintextListen.map { plaintext throws(LoopError) in
            try TCPListener(loop: loop, address: plaintext) { [unowned self] connection in accept(connection, tls: nil) }
        }
        handles.listening(listener, plaintext: plaintextListener, metrics: metrics, http: http)
        core.linePort = listener.address.port
        if let port = http?.address?.port { core.announceHTTPPort(port) }
        let signals = (stopOnSignals ? [SignalNumber.interrupt, SignalNumber.terminate] : []).map { signal in
            SignalWatcher(loop: loop, signal: signal) { [unowned self] in shutdown() }
        }
        var controlWatcher: FolderWatcher?
        if let signal = core.store.accountChanges {
            do {
                controlWatcher = try FolderWatcher(loop: loop, path: signal.folder) { [unowned self] _ in core.checkAccounts() }
            } catch {
                ServerLog.error("warning: cannot watch \(signal.folder) (\(error)); account changes apply within a second")
            }
        }
        handles.running(signals: signals, controlWatcher: controlWatcher)
        core.start { [unowned self] in
            handles.closeAll()
            onStopped()
        }
        let security = configuration.tls == nil ? "" : " (TLS)"
        let scheme = configuration.tls == nil ? "http" : "https"
        let plaintext = (plaintextListener.map { ", plaintext on \($0.address)" } ?? "") + (metrics?.address.map { ", metrics on http://\($0)/metrics" } ?? "")
            + (http?.address.map { ", web console and API on \(scheme)://\($0)/" } ?? "")
        ServerLog.info("plistsync serving on \(listener.address)\(security)\(plaintext), records in \(core.store.location)")
    }

    /// Stops accepting, then lets the core drain its commits and say `* BYE SHUTDOWN`.
    public func shutdown() {
        guard !core.isShuttingDown else { return }
        handles.stopAccepting()
        core.shutdown()
    }

    func accept(_ connection: TCPConnection, tls: TLSContext?) {
        guard admit(connection, tls: tls, refusal: { $0 == .tlsRequired ? Self.plaintextRefusal : Array(ServerNotice.bye($0).line.utf8) }) else { return }
        core.open(ByteSessionTransport(connection))
    }

    /// Starts TLS on a new connection and lets it in unless the server is shutting down or at
    /// `--max-connections` (then `refusal` of the reason is written and it is closed); makes
    /// room among the connections not logged in. A client speaking plaintext to a TLS port gets
    /// `refusal(.tlsRequired)`, in plaintext. The protocol and HTTP ports share it.
    func admit(_ connection: TCPConnection, tls: TLSContext?, refusal: (ByeReason) -> [UInt8]) -> Bool {
        if let tls {
            do {
                connection.security = try TLSSession(context: tls, plaintextRefusal: refusal(.tlsRequired))
            } catch {
                ServerLog.error("cannot start TLS for \(connection.peer?.host ?? "unknown"): \(error)")
                connection.close()
                return false
            }
        }
        if let reason = core.refusalOfANewConnection(from: connection.peer?.host ?? "unknown") {
            connection.write(refusal(reason))
            connection.closeAfterWriting()
            return false
        }
        if configuration.socketSendBufferBytes > 0 { connection.limitSendBuffer(to: configuration.socketSendBufferBytes) }
        ServerLog.event("connect", ["address": connection.peer?.host ?? "unknown", "tls": tls == nil ? "no" : "yes"])
        core.makeRoomForANewConnection()
        return true
    }
}
