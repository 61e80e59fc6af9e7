import Foundation
import ServerHTTP
import ServerKit
import SyncCore

/// The real server's core (`ServerCore`: sessions, committer, hub, budgets, deadlines) as a
/// process on the scheduler's virtual time, over a store inside a seeded faulty disk
/// (`FaultyStore`), with no sockets: each client connection is the test kit's
/// `MemoryByteConnection`. A request is one turn of the server; what it wrote reaches its client
/// at the end of the turn. Deadlines, pacing and housekeeping run on virtual time, so a test of
/// an idle timeout takes microseconds and a seeded run is the same every time.
public final class SimulatedServer {
    public let scheduler: Scheduler
    public let faults: StoreFaults
    public let configuration: ServerConfiguration
    /// The server process now serving; nil while it is down.
    public private(set) var core: ServerCore?
    private var host: VirtualServerHost?
    private var connections: [SimulatedConnection] = []
    private var connectionCount = 0

    /// The server's wall clock at virtual time 0 (seconds since 1970).
    private let epochSeconds: Int64
    /// The server's wall clock now.
    public var wallClockSeconds: Int64 { epochSeconds + Int64(scheduler.now / 1000) }

    /// Serves `store` (wrapped in the faults) at once. `epochSeconds`: the server's wall clock
    /// at virtual time 0; a store that stamps its rows with the real time (SQLite's tombstones)
    /// needs the real time here, or the server's purge would take every tombstone for old.
    public init(
        scheduler: Scheduler, configuration: ServerConfiguration, store: ServerStore, faults: StoreFaults = StoreFaults(),
        epochSeconds: Int64 = Int64(SimulatedClock.epoch.timeIntervalSince1970)
    ) throws {
        self.scheduler = scheduler
        self.faults = faults
        self.configuration = configuration
        self.epochSeconds = epochSeconds
        try start(on: store)
    }

    /// A new server process on `store`.
    public func start(on store: ServerStore) throws {
        let host = VirtualServerHost(scheduler: scheduler, faults: faults, epochSeconds: epochSeconds)
        let core = try ServerCore(configuration: configuration, store: FaultyStore(store, faults: faults), clock: host, work: host)
        host.afterTurn = { [unowned self] in handOver() }
        self.host = host
        self.core = core
        host.turn { core.start() }
    }

    /// The server process ends: every client is cut off (and hears of it), the sessions are
    /// let go, and nothing the process scheduled happens any more. What the store committed
    /// stays; a commit held by a stall never happened.
    public func stop() {
        let cut = connections
        connections.removeAll()
        for connection in cut { connection.cutOff() }
        if let core, let host {
            host.turn { core.shutdown() }
            host.kill()
        }
        httpFront = nil
        core = nil
        host = nil
    }

    /// Runs `body` as a turn of the server (nothing when it is down).
    public func turn(_ body: (ServerCore) -> Void) {
        guard let host, let core else { return }
        host.turn { body(core) }
    }

    /// A new client connection; `deliver` gets each batch of whole lines the server wrote, at
    /// the end of the turn that wrote them (none when the client reads `bytes` itself).
    /// `open` starts the session (by default as a socket's would be).
    public func connect(
        deliver: (([[UInt8]]) -> Void)? = nil, open: @escaping (ServerCore, MemoryByteConnection) -> Void = { $0.serve($1) }
    ) -> SimulatedConnection {
        connectionCount += 1
        let connection = SimulatedConnection(number: connectionCount, server: self, deliver: deliver)
        guard let host, let core else {
            // Not serving: the connection is refused.
            connection.closedByServer()
            return connection
        }
        connection.bytes = MemoryByteConnection(clock: host)
        connections.append(connection)
        host.turn { open(core, connection.bytes) }
        return connection
    }

    /// A client connection to the HTTP front (made at the first), bytes in memory.
    public func connectHTTP() -> SimulatedConnection {
        connect(open: { [unowned self] core, bytes in
            if httpFront == nil { httpFront = HTTPFront(core: core) }
            httpFront?.serve(bytes)
        })
    }

    /// The HTTP front of the process now serving.
    private var httpFront: HTTPFront?

    fileprivate func send(_ bytes: [UInt8], on connection: SimulatedConnection) {
        host?.turn { connection.bytes.receive(bytes) }
    }

    fileprivate func hangUp(_ connection: SimulatedConnection) {
        connections.removeAll { $0 === connection }
        host?.turn { connection.bytes.hangUp(reset: true) }
    }

    /// The end of a turn: every client gets what was written to it, in connection order.
    private func handOver() {
        for connection in connections { connection.handOver() }
        connections.removeAll { $0.isClosed }
    }
}

/// A client's end of one connection to a `SimulatedServer`.
public final class SimulatedConnection {
    /// Which connection of the server this is (handed its lines in this order).
    public let number: Int
    private unowned let server: SimulatedServer
    private let deliver: (([[UInt8]]) -> Void)?
    /// The bytes between the client and its session.
    public fileprivate(set) var bytes: MemoryByteConnection!
    /// Whether the connection is over for the client (it went away, or heard the server close).
    public private(set) var isClosed = false
    /// Called when the server ends the connection (after the last lines it wrote).
    public var onClosed: () -> Void = {}

    fileprivate init(number: Int, server: SimulatedServer, deliver: (([[UInt8]]) -> Void)?) {
        self.number = number
        self.server = server
        self.deliver = deliver
    }

    /// Sends one line (a newline is added).
    public func send(_ line: String) {
        send(bytes: Array((line + "\n").utf8))
    }

    public func send(bytes: [UInt8]) {
        guard !isClosed else { return }
        server.send(bytes, on: self)
    }

    /// The client goes away (a crash, a dropped connection): the server's read fails.
    public func drop() {
        guard !isClosed else { return }
        isClosed = true
        server.hangUp(self)
    }

    /// The server's process ended: the client hears the connection close.
    fileprivate func cutOff() {
        guard !isClosed else { return }
        isClosed = true
        onClosed()
    }

    fileprivate func closedByServer() {
        isClosed = true
    }

    /// Hands the client the whole lines the server wrote; then, if the server closed the
    /// connection, tells the client so.
    fileprivate func handOver() {
        guard !isClosed else { return }
        if let deliver, let end = bytes.output.lastIndex(of: 0x0A) {
            let lines = bytes.output[...end].split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map(Array.init)
            bytes.output.removeFirst(end + 1)
            deliver(lines)
        }
        guard bytes.isClosed else { return }
        isClosed = true
        onClosed()
    }
}
