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
    let committer: Committer
    let hub: Hub
    let directory: Directory
    let logins: LoginGate
    /// Every store read after start goes through here, off the loop thread.
    let reads: StoreReads
    let serverID: String
    let limitsJSON: String

    var listener: TCPListener?
    var plaintextListener: TCPListener?
    var sessions: [ObjectIdentifier: Session] = [:]
    /// Bytes handed to connections since the last exact count (`Server+MemoryBudget`).
    var bufferedEstimate = 0
    /// Connections closed to stay within the memory budget, for the metrics.
    var shedTotal = 0
    /// When a count that could not get under the budget (connections already closing hold
    /// the bytes) may be done again.
    var budgetRecountAt: UInt64 = 0
    /// Set while connections are being closed for the budget (their BYE lines count as sends).
    var enforcingBudget = false
    var housekeeping: LoopTimer?
    var signalWatchers: [SignalWatcher] = []
    var shuttingDown = false
    let startedAt: UInt64
    var recentChanges: [(second: UInt64, count: Int)] = []
    /// Counters for the metrics endpoint.
    var changesTotal = 0
    var loginsTotal = (succeeded: 0, failed: 0)
    var metrics: MetricsEndpoint?
    /// The HTTP API and console (`--http-listen`).
    var http: HTTPFront?
    var onStopped: (() -> Void)?
    var graceTimer: LoopTimer?
    var nextPurgeAt: UInt64 = 0
    var controlWatcher: FolderWatcher?
    var appliedAccountsEpoch: Int64 = 0
    /// The collections and members the directory last took in from an account check.
    let membershipBaseline: MembershipBaseline
    /// An account check is being read from the store; another was asked for meanwhile.
    var accountCheck: (running: Bool, again: Bool, force: Bool) = (false, false, false)
    /// The store's size on disk, read off the loop by housekeeping (STATS, metrics).
    var storeBytes: Int64 = 0
    var nextSizeReadAt: UInt64 = 0
    /// The change log is being read for the feed's gaps (cluster).
    var readingChangeLog = false
    var readingCurrentSeq = false
    /// Sessions not logged in yet, oldest first (entries of sessions since gone or logged in
    /// are skipped when met), and how many there are.
    var preAuthOrder = FIFO<ObjectIdentifier>()
    var preAuthCount = 0
    var waitingForCommitRoom: [ObjectIdentifier: Session] = [:]
    /// Set when a commit failed for lack of disk space: the reserve file is given back and only
    /// DEL is let through until the disk has room again (checked each second).
    var diskFull = false
    /// With a store shared by several nodes: orders this node's commits and the others' into
    /// one gap-free feed.
    var feed: FeedSequencer?

    /// Serves `store`; nothing listens until `start()`.
    public init(configuration: ServerConfiguration, store: ServerStore, loop: EventLoop) throws(StoreFailure) {
        self.configuration = configuration
        self.loop = loop
        self.store = store
        appliedAccountsEpoch = try store.accountsEpoch()
        store.accountChanges?.confirmApplied(epoch: appliedAccountsEpoch)
        reads = StoreReads(loop: loop, store: store, deadlineMilliseconds: configuration.storeTimeoutMilliseconds)
        logins = LoginGate(loop: loop, reads: reads)
        committer = Committer(loop: loop, store: store, stallMilliseconds: configuration.storeTimeoutMilliseconds)
        let collections = try store.collections()
        directory = Directory(collections)
        membershipBaseline = MembershipBaseline(collections)
        if configuration.maxBytesPerUser > 0 { directory.loadSizes(try store.storedBytesByCollection()) }
        serverID = try store.serverID()
        let seq = try store.currentSeq()
        hub = Hub(lastSeq: seq)
        if store.cluster != nil { feed = FeedSequencer(deliveredThrough: seq) }
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
        limitsJSON = ValueJSON.encode(.dictionary(hello))
        startedAt = loop.nowMilliseconds
        storeBytes = store.sizeBytes()
        committer.onCommitted = { [unowned self] changes in
            if feed == nil { committed(changes) } else { sequence(changes) }
        }
        committer.onIdle = { [unowned self] in if shuttingDown { finishShutdown() } }
        committer.onRoom = { [unowned self] in wakeSessionsWaitingForCommitRoom() }
        committer.onFailure = { [unowned self] error in if error.isDiskFull { enterDiskFullMode() } }
        if let reserve = store.spaceReserve, !reserve.create() { ServerLog.error("warning: no room for the space reserve \(reserve.path)") }
    }

    func enterDiskFullMode() {
        guard !diskFull else { return }
        diskFull = true
        store.spaceReserve?.remove()
        ServerLog.error("the disk of \(configuration.dataPath) is full: only DEL and reads are served until it has room")
    }

    func leaveDiskFullModeIfRoom() {
        guard diskFull, store.spaceReserve?.hasRoomToResume() ?? true else { return }
        store.spaceReserve?.create()
        diskFull = false
        ServerLog.info("the disk of \(configuration.dataPath) has room again: writes resume")
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var boundAddress: SocketAddress? { listener?.address }
    /// The HTTP listener's address, when there is one.
    public var httpAddress: SocketAddress? { http?.address }

    /// Serves the HTTP API over `connection` without a listener (bytes in memory, for tests
    /// that need no process); the front is made at the first.
    func serveHTTP(over connection: ByteConnection) {
        if http == nil { http = try? HTTPFront(server: self, address: nil, tls: nil) }
        http?.serve(connection, isSecure: false)
    }

    /// The answer, in plaintext, to a client that speaks plain text on the TLS port.
    static let plaintextRefusal = Array(ServerNotice.bye(.tlsRequired, detail: "this port speaks TLS: connect with --tls").line.utf8)

    /// Binds the listener, installs signal handlers and starts housekeeping.
    public func start(onStopped: @escaping () -> Void = {}) throws(LoopError) {
        self.onStopped = onStopped
        listener = try TCPListener(loop: loop, address: configuration.listen) { [unowned self] connection in
            accept(connection, tls: configuration.tls)
        }
        if let address = configuration.metricsListen {
            metrics = try MetricsEndpoint(loop: loop, address: address) { [unowned self] in metricsText() }
        }
        if let address = configuration.httpListen {
            http = try HTTPFront(server: self, address: address, tls: configuration.tls)
        }
        if let plaintext = configuration.plaintextListen {
            plaintextListener = try TCPListener(loop: loop, address: plaintext) { [unowned self] connection in
                accept(connection, tls: nil)
            }
        }
        for signal in [SignalNumber.interrupt, SignalNumber.terminate] {
            signalWatchers.append(SignalWatcher(loop: loop, signal: signal) { [unowned self] in shutdown() })
        }
        let timer = LoopTimer(loop: loop)
        timer.start(after: 1_000, repeatEvery: 1_000) { [unowned self] in housekeep() }
        housekeeping = timer
        if let signal = store.accountChanges {
            do {
                controlWatcher = try FolderWatcher(loop: loop, path: signal.folder) { [unowned self] _ in checkAccounts() }
            } catch {
                ServerLog.error("warning: cannot watch \(signal.folder) (\(error)); account changes apply within a second")
            }
        }
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
        ServerLog.info("plistsync serving on \(listener!.address)\(security)\(plaintext), records in \(store.location)")
    }

    func accept(_ connection: TCPConnection, tls: TLSContext?) {
        guard admit(connection, tls: tls, refusal: { $0 == .tlsRequired ? Self.plaintextRefusal : Array(ServerNotice.bye($0).line.utf8) }) else { return }
        open(TCPSessionTransport(connection))
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
        guard !shuttingDown else {
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
        if preAuthCount >= configuration.maxUnauthenticated { evictOldestUnauthenticated() }
        return true
    }

    /// Starts a session on `transport` (a socket that was accepted, or a buffer in tests).
    @discardableResult
    func open(_ transport: SessionTransport) -> Session {
        let session = Session(context: self, transport: transport)
        let key = ObjectIdentifier(session)
        sessions[key] = session
        preAuthOrder.append(key)
        preAuthCount += 1
        // Entries of sessions that have logged in or gone leave from the front as they come up
        // (a session cannot stay at the front long: the pre-auth deadline closes it).
        while let oldest = preAuthOrder.first, sessions[oldest]?.user != nil || sessions[oldest] == nil {
            _ = preAuthOrder.popFirst()
        }
        return session
    }

    /// The session's connection is closed: it is forgotten.
    func sessionGone(_ session: Session) {
        sessions[ObjectIdentifier(session)] = nil
        if shuttingDown, sessions.isEmpty { closeHandles() }
    }

    /// Closes the longest-waiting connection that has not logged in and is not waiting for a
    /// login answer, to make room for a new one.
    func evictOldestUnauthenticated() {
        // Sessions waiting for a login answer go to the back; one full pass at most.
        var looked = 0
        while looked <= preAuthOrder.count, let key = preAuthOrder.popFirst() {
            looked += 1
            guard let session = sessions[key], session.user == nil, session.closeReason == nil else { continue }
            if session.isLoggingIn {
                preAuthOrder.append(key)
                continue
            }
            session.sayGoodbye(.busy)
            return
        }
    }

    func sessionLoggedIn(_ session: Session) {
        preAuthCount -= 1
        loginsTotal.succeeded += 1
    }

    func loginFailed() {
        loginsTotal.failed += 1
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
        metrics.add("plistsync_changes_total", "counter", "Changes committed since start.", Double(changesTotal))
        metrics.add("plistsync_commits_total", "counter", "Group commits (transactions) since start.", Double(committer.batches))
        metrics.add("plistsync_queued_writes", "gauge", "Writes waiting for the next group commit.", Double(committer.queuedCount))
        metrics.add("plistsync_seq", "gauge", "Sequence number of the last change broadcast.", Double(hub.lastBroadcastSeq))
        metrics.add("plistsync_fanout_pending_bytes", "gauge", "Bytes of broadcasts and replies not yet taken by clients, all connections.", Double(pending))
        metrics.add("plistsync_fanout_pending_bytes_max", "gauge", "The most any one connection has not taken yet (the slowest subscriber's lag).", Double(pendingMax))
        metrics.add("plistsync_shed_connections_total", "counter", "Connections closed to keep buffered bytes within --max-buffered-bytes.", Double(shedTotal))
        metrics.add("plistsync_logins_total", "counter", "Logins since start.", Double(loginsTotal.succeeded), labels: "result=\"ok\"")
        metrics.add("plistsync_logins_total", "counter", "Logins since start.", Double(loginsTotal.failed), labels: "result=\"failed\"")
        metrics.add("plistsync_collections", "gauge", "Collections.", Double(directory.collections.count))
        metrics.add("plistsync_store_bytes", "gauge", "Size of the store on disk, WAL included.", Double(storeBytes))
        metrics.add("plistsync_uptime_seconds", "gauge", "Seconds since the server started.", Double((loop.nowMilliseconds - startedAt) / 1000))
        return metrics.text
    }

    /// Called once as a session closes, whatever the reason.
    func sessionClosing(_ session: Session) {
        if session.user == nil { preAuthCount -= 1 }
        waitingForCommitRoom[ObjectIdentifier(session)] = nil
    }

    /// `session` has writes to hand over but the commit queue is full: it is woken when a batch
    /// makes room.
    func waitForCommitRoom(_ session: Session) {
        waitingForCommitRoom[ObjectIdentifier(session)] = session
    }

    func wakeSessionsWaitingForCommitRoom() {
        // Woken in turn while there is room; the rest stay waiting for the next batch.
        for (key, session) in waitingForCommitRoom {
            guard committer.hasRoom else { return }
            waitingForCommitRoom[key] = nil
            session.commitRoomAvailable()
        }
    }
}
