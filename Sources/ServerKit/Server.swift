import EventLoop
import Foundation
import SyncCore
import SyncProtocol
import TLSKit

/// `plistsync serve`: the listener, the sessions, the group committer and the broadcast hub,
/// wired together on one event loop.
///
/// Loop-thread object. `start()` binds and returns; `EventLoop.run()` serves until `shutdown()`
/// (SIGINT/SIGTERM) has drained the in-flight commits and said `* BYE SHUTDOWN` to everyone.
public final class Server {
    public let configuration: ServerConfiguration
    let loop: EventLoop
    let store: ServerStore
    private(set) lazy var committer = Committer(loop: loop, store: store, stallMilliseconds: configuration.storeTimeoutMilliseconds, outlet: self)
    let hub: Hub
    let directory: Directory
    let logins: LoginGate
    /// Every store read after start goes through here, off the loop thread.
    let reads: StoreReads
    let serverID: String
    /// HELLO's JSON: the limits, `restored_seq`, and once the HTTP listener is bound its port.
    private(set) var limitsJSON: String
    private var helloFields: [String: Value]

    /// Sessions by identity; written only here (`open`, `sessionGone`).
    private(set) var sessions: [ObjectIdentifier: Session] = [:]
    let startedAt: UInt64
    /// The collections and members the directory last took in from an account check.
    let membershipBaseline: MembershipBaseline
    /// With a store shared by several nodes: orders this node's commits and the others' into
    /// one gap-free feed (advanced only in `Server+Cluster`).
    var feed: FeedSequencer?
    let handles = ServerHandles()
    let memoryBudget: MemoryBudget
    let preAuth = PreAuthQueue()
    let counters = ServerCounters()
    let commitRoom = CommitRoomWaiters()
    let accountChecks: AccountChecks
    let space: StoreSpace
    let clusterReads = ClusterReads()
    /// When tombstones are purged next (housekeeping).
    private(set) var nextPurgeAt: UInt64 = 0

    /// Serves `store`; nothing listens until `start()`.
    public init(configuration: ServerConfiguration, store: ServerStore, loop: EventLoop) throws(StoreFailure) {
        self.configuration = configuration
        self.loop = loop
        self.store = store
        let epoch = try store.accountsEpoch()
        accountChecks = AccountChecks(appliedEpoch: epoch)
        store.accountChanges?.confirmApplied(epoch: epoch)
        memoryBudget = MemoryBudget(maxBufferedBytes: configuration.maxBufferedBytes)
        reads = StoreReads(loop: loop, store: store, deadlineMilliseconds: configuration.storeTimeoutMilliseconds)
        logins = LoginGate(loop: loop, reads: reads)
        let collections = try store.collections()
        directory = Directory(collections)
        membershipBaseline = MembershipBaseline(collections)
        if configuration.maxBytesPerUser > 0 { directory.loadSizes(try store.storedBytesByCollection()) }
        serverID = try store.serverID()
        let seq = try store.currentSeq()
        hub = Hub(lastSeq: seq)
        feed = store.cluster != nil ? FeedSequencer(deliveredThrough: seq) : nil
        let limits = configuration.limits
        var hello: [String: Value] = [
            "max_line_bytes": .integer(Int64(limits.maxLineBytes)),
            "max_record_bytes": .integer(Int64(limits.maxRecordBytes)),
            "max_pending_output_bytes": .integer(Int64(limits.maxPendingOutputBytes)),
            "idle_timeout_seconds": .integer(Int64(configuration.idleTimeoutSeconds)),
            "preauth_line_bytes": .integer(Int64(configuration.preAuthMaxLineBytes)),
            "preauth_timeout_seconds": .integer(Int64(configuration.preAuthTimeoutSeconds)),
        ]
        hello["restored_seq"] = try store.restoredSeq().map(Value.integer)
        helloFields = hello
        limitsJSON = ValueJSON.encode(.dictionary(hello))
        startedAt = loop.nowMilliseconds
        space = StoreSpace(bytes: store.sizeBytes())
        if let reserve = store.spaceReserve, !reserve.create() { ServerLog.error("warning: no room for the space reserve \(reserve.path)") }
    }

    /// Whether only DEL is let through (`StoreSpace`).
    var diskFull: Bool { space.isDiskFull }

    func enterDiskFullMode() {
        guard space.diskFilled() else { return }
        store.spaceReserve?.remove()
        ServerLog.error("the disk of \(configuration.dataPath) is full: only DEL and reads are served until it has room")
    }

    func leaveDiskFullModeIfRoom() {
        guard space.isDiskFull, store.spaceReserve?.hasRoomToResume() ?? true else { return }
        store.spaceReserve?.create()
        space.roomAgain()
        ServerLog.info("the disk of \(configuration.dataPath) has room again: writes resume")
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var boundAddress: SocketAddress? { handles.listener?.address }
    /// The HTTP listener's address, when there is one.
    public var httpAddress: SocketAddress? { handles.http?.address }

    /// Serves the HTTP API over `connection` without a listener (bytes in memory, for tests
    /// that need no process); the front is made at the first.
    func serveHTTP(over connection: ByteConnection) {
        handles.httpFront { try? HTTPFront(server: self, address: nil, tls: nil) }?.serve(connection, isSecure: false)
    }

    /// The answer, in plaintext, to a client that speaks plain text on the TLS port.
    static let plaintextRefusal = Array(ServerNotice.bye(.tlsRequired, detail: "this port speaks TLS: connect with --tls").line.utf8)

    /// Binds the listener, installs signal handlers (unless `stopOnSignals` is false: a server
    /// run inside a test is stopped by `shutdown()`) and starts housekeeping.
    public func start(stopOnSignals: Bool = true, onStopped: @escaping () -> Void = {}) throws(LoopError) {
        let listener = try TCPListener(loop: loop, address: configuration.listen) { [unowned self] connection in
            accept(connection, tls: configuration.tls)
        }
        let metrics = try configuration.metricsListen.map { address throws(LoopError) in
            try MetricsEndpoint(loop: loop, address: address) { [unowned self] in metricsText() }
        }
        let http = try configuration.httpListen.map { address throws(LoopError) in
            try HTTPFront(server: self, address: address, tls: configuration.tls)
        }
        let plaintextListener = try configuration.plaintextListen.map { plaintext throws(LoopError) in
            try TCPListener(loop: loop, address: plaintext) { [unowned self] connection in accept(connection, tls: nil) }
        }
        handles.listening(listener, plaintext: plaintextListener, metrics: metrics, http: http)
        if let port = http?.address?.port {
            // Where the console and the API answer: `plistsync invite` builds its links with it.
            helloFields["http_port"] = .integer(Int64(port))
            limitsJSON = ValueJSON.encode(.dictionary(helloFields))
        }
        let signals = (stopOnSignals ? [SignalNumber.interrupt, SignalNumber.terminate] : []).map { signal in
            SignalWatcher(loop: loop, signal: signal) { [unowned self] in shutdown() }
        }
        let timer = LoopTimer(loop: loop)
        timer.start(after: 1_000, repeatEvery: 1_000) { [unowned self] in housekeep() }
        var controlWatcher: FolderWatcher?
        if let signal = store.accountChanges {
            do {
                controlWatcher = try FolderWatcher(loop: loop, path: signal.folder) { [unowned self] _ in checkAccounts() }
            } catch {
                ServerLog.error("warning: cannot watch \(signal.folder) (\(error)); account changes apply within a second")
            }
        }
        handles.running(housekeeping: timer, signals: signals, controlWatcher: controlWatcher, onStopped: onStopped)
        store.cluster?.listen(
            onEvent: { [unowned self] event in clusterEvent(event) }, onResync: { [unowned self] in resync() },
            onTrouble: { problem in ServerLog.error(problem) })
        // Commits other nodes made between reading the seq and listening.
        catchUpWithStore()
        purgeTombstones()
        let security = configuration.tls == nil ? "" : " (TLS)"
        let scheme = configuration.tls == nil ? "http" : "https"
        let plaintext = (plaintextListener.map { ", plaintext on \($0.address)" } ?? "") + (metrics?.address.map { ", metrics on http://\($0)/metrics" } ?? "")
            + (http?.address.map { ", web console and API on \(scheme)://\($0)/" } ?? "")
        ServerLog.info("plistsync serving on \(listener.address)\(security)\(plaintext), records in \(store.location)")
    }

    func accept(_ connection: TCPConnection, tls: TLSContext?) {
        guard admit(connection, tls: tls, refusal: { $0 == .tlsRequired ? Self.plaintextRefusal : Array(ServerNotice.bye($0).line.utf8) }) else { return }
        open(ByteSessionTransport(connection))
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
        guard !handles.isShuttingDown else {
            connection.write(refusal(.shutdown))
            connection.closeAfterWriting()
            return false
        }
        guard sessions.count < configuration.maxConnections else {
            ServerLog.info("refusing a connection from \(connection.peer?.host ?? "unknown"): --max-connections \(configuration.maxConnections) reached")
            connection.write(refusal(.busy))
            connection.closeAfterWriting()
            return false
        }
        if configuration.socketSendBufferBytes > 0 { connection.limitSendBuffer(to: configuration.socketSendBufferBytes) }
        ServerLog.event("connect", ["address": connection.peer?.host ?? "unknown", "tls": tls == nil ? "no" : "yes"])
        if preAuth.count >= configuration.maxUnauthenticated { preAuth.oldestToEvict { sessions[$0] }?.sayGoodbye(.busy) }
        return true
    }

    /// Starts a session on `transport` (a socket that was accepted, or a buffer in tests).
    @discardableResult
    func open(_ transport: SessionTransport) -> Session {
        let session = Session(context: self, transport: transport)
        let key = ObjectIdentifier(session)
        sessions[key] = session
        preAuth.opened(key) { sessions[$0]?.user != nil || sessions[$0] == nil }
        return session
    }

    /// The session's connection is closed: it is forgotten.
    func sessionGone(_ session: Session) {
        sessions[ObjectIdentifier(session)] = nil
        if handles.isShuttingDown, sessions.isEmpty { closeHandles() }
    }

    func sessionLoggedIn(_ session: Session) {
        preAuth.loggedIn()
        counters.loginSucceeded()
    }

    func loginFailed() {
        counters.loginFailed()
    }

    /// The figures of `GET /metrics` (Prometheus text format).
    func metricsText() -> String {
        var metrics = MetricsText()
        var pending = 0
        var pendingMax = 0
        for session in sessions.values {
            let bytes = session.pendingOutputBytes
            pending += bytes
            pendingMax = max(pendingMax, bytes)
        }
        metrics.add("plistsync_connections", "gauge", "Open client connections.", Double(sessions.count))
        metrics.add("plistsync_subscriptions", "gauge", "Live collection subscriptions.", Double(hub.subscriptionCount))
        metrics.add("plistsync_changes_total", "counter", "Changes committed since start.", Double(counters.changesTotal))
        metrics.add("plistsync_commits_total", "counter", "Group commits (transactions) since start.", Double(committer.batches))
        metrics.add("plistsync_queued_writes", "gauge", "Writes waiting for the next group commit.", Double(committer.queuedCount))
        metrics.add("plistsync_seq", "gauge", "Sequence number of the last change broadcast.", Double(hub.lastBroadcastSeq))
        metrics.add("plistsync_fanout_pending_bytes", "gauge", "Bytes of broadcasts and replies not yet taken by clients, all connections.", Double(pending))
        metrics.add("plistsync_fanout_pending_bytes_max", "gauge", "The most any one connection has not taken yet (the slowest subscriber's lag).", Double(pendingMax))
        metrics.add("plistsync_shed_connections_total", "counter", "Connections closed to keep buffered bytes within --max-buffered-bytes.", Double(memoryBudget.shedTotal))
        metrics.add("plistsync_logins_total", "counter", "Logins since start.", Double(counters.loginsSucceeded), labels: "result=\"ok\"")
        metrics.add("plistsync_logins_total", "counter", "Logins since start.", Double(counters.loginsFailed), labels: "result=\"failed\"")
        metrics.add("plistsync_collections", "gauge", "Collections.", Double(directory.collections.count))
        metrics.add("plistsync_store_bytes", "gauge", "Size of the store on disk, WAL included.", Double(space.bytes))
        metrics.add("plistsync_uptime_seconds", "gauge", "Seconds since the server started.", Double((loop.nowMilliseconds - startedAt) / 1000))
        return metrics.text
    }

    /// Called once as a session closes, whatever the reason.
    func sessionClosing(_ session: Session) {
        preAuth.closing(loggedIn: session.user != nil)
        commitRoom.forget(session)
    }

    /// `session` has writes to hand over but the commit queue is full: it is woken when a batch
    /// makes room.
    func waitForCommitRoom(_ session: Session) {
        commitRoom.wait(session)
    }

    func wakeSessionsWaitingForCommitRoom() {
        commitRoom.wake { committer.hasRoom }
    }

    /// Bytes were handed to a connection (`MemoryBudget`).
    func noteQueued(_ bytes: Int) {
        if memoryBudget.noteQueued(bytes, now: loop.nowMilliseconds) { enforceMemoryBudget() }
    }

    func enforceMemoryBudget() {
        memoryBudget.enforce(on: sessions.values, now: loop.nowMilliseconds)
    }

    /// Purges tombstones older than `--tombstone-ttl` (housekeeping: at most hourly).
    func purgeTombstones() {
        nextPurgeAt = loop.nowMilliseconds + max(1, min(configuration.tombstoneTTLSeconds, 3600)) * 1000
        let cutoff = Int64(Date().timeIntervalSince1970) - Int64(configuration.tombstoneTTLSeconds)
        committer.submit(.purgeTombstones(updatedBefore: cutoff)) { _ in }
    }
}

extension Server: CommitterOutlet {
    func committer(_ notice: CommitterNotice) {
        switch notice {
        case .committed(let changes): if feed == nil { committed(changes) } else { sequence(changes) }
        case .failed(let error): if error.isDiskFull { enterDiskFullMode() }
        case .room: wakeSessionsWaitingForCommitRoom()
        case .idle: if handles.isShuttingDown { finishShutdown() }
        }
    }
}
