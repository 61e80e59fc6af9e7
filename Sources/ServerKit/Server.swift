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
    let serverID: String
    let limitsJSON: String

    private var listener: TCPListener?
    private var plaintextListener: TCPListener?
    private(set) var sessions: [ObjectIdentifier: Session] = [:]
    /// Bytes handed to connections since the last exact count (`Server+MemoryBudget`).
    var bufferedEstimate = 0
    /// Connections closed to stay within the memory budget, for the metrics.
    var shedTotal = 0
    /// When a count that could not get under the budget (connections already closing hold
    /// the bytes) may be done again.
    var budgetRecountAt: UInt64 = 0
    /// Set while connections are being closed for the budget (their BYE lines count as sends).
    var enforcingBudget = false
    private var housekeeping: LoopTimer?
    private var signalWatchers: [SignalWatcher] = []
    private var shuttingDown = false
    private let startedAt: UInt64
    private var recentChanges: [(second: UInt64, count: Int)] = []
    /// Counters for the metrics endpoint.
    private var changesTotal = 0
    private(set) var loginsTotal = (succeeded: 0, failed: 0)
    private var metrics: MetricsEndpoint?
    private var onStopped: (() -> Void)?
    private var graceTimer: LoopTimer?
    private var nextPurgeAt: UInt64 = 0
    private var controlWatcher: FolderWatcher?
    private var appliedAccountsEpoch: Int64 = 0
    /// Sessions not logged in yet, oldest first (entries of sessions since gone or logged in
    /// are skipped when met), and how many there are.
    private var preAuthOrder = FIFO<ObjectIdentifier>()
    private var preAuthCount = 0
    private var waitingForCommitRoom: [ObjectIdentifier: Session] = [:]
    /// Set when a commit failed for lack of disk space: the reserve file is given back and only
    /// DEL is let through until the disk has room again (checked each second).
    private(set) var diskFull = false
    /// With a store shared by several nodes: orders this node's commits and the others' into
    /// one gap-free feed.
    private var feed: FeedSequencer?

    /// Serves `store`; nothing listens until `start()`.
    public init(configuration: ServerConfiguration, store: ServerStore, loop: EventLoop) throws(StoreFailure) {
        self.configuration = configuration
        self.loop = loop
        self.store = store
        appliedAccountsEpoch = try store.accountsEpoch()
        store.accountChanges?.confirmApplied(epoch: appliedAccountsEpoch)
        logins = LoginGate(loop: loop, store: store)
        committer = Committer(loop: loop, store: store)
        directory = Directory(try store.collections())
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
        committer.onCommitted = { [unowned self] changes in
            if feed == nil { committed(changes) } else { sequence(changes) }
        }
        committer.onIdle = { [unowned self] in if shuttingDown { finishShutdown() } }
        committer.onRoom = { [unowned self] in wakeSessionsWaitingForCommitRoom() }
        committer.onFailure = { [unowned self] error in if error.isDiskFull { enterDiskFullMode() } }
        if let reserve = store.spaceReserve, !reserve.create() { ServerLog.error("warning: no room for the space reserve \(reserve.path)") }
    }

    private func enterDiskFullMode() {
        guard !diskFull else { return }
        diskFull = true
        store.spaceReserve?.remove()
        ServerLog.error("the disk of \(configuration.dataPath) is full: only DEL and reads are served until it has room")
    }

    private func leaveDiskFullModeIfRoom() {
        guard diskFull, store.spaceReserve?.hasRoomToResume() ?? true else { return }
        store.spaceReserve?.create()
        diskFull = false
        ServerLog.info("the disk of \(configuration.dataPath) has room again: writes resume")
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var boundAddress: SocketAddress? { listener?.address }

    /// Binds the listener, installs signal handlers and starts housekeeping.
    public func start(onStopped: @escaping () -> Void = {}) throws(LoopError) {
        self.onStopped = onStopped
        listener = try TCPListener(loop: loop, address: configuration.listen) { [unowned self] connection in
            accept(connection, tls: configuration.tls)
        }
        if let address = configuration.metricsListen {
            metrics = try MetricsEndpoint(loop: loop, address: address) { [unowned self] in metricsText() }
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
        store.cluster?.listen(on: loop, onEvent: { [unowned self] event in clusterEvent(event) }, onResync: { [unowned self] in resync() })
        // Commits other nodes made between reading the seq and listening.
        catchUpWithStore()
        purgeTombstones()
        let security = configuration.tls == nil ? "" : " (TLS)"
        let plaintext = (plaintextListener.map { ", plaintext on \($0.address)" } ?? "") + (metrics?.address.map { ", metrics on http://\($0)/metrics" } ?? "")
        ServerLog.info("plistsync serving on \(listener!.address)\(security)\(plaintext), records in \(store.location)")
    }

    private func accept(_ connection: TCPConnection, tls: TLSContext?) {
        if let tls {
            do {
                connection.security = try TLSSession(context: tls)
            } catch {
                ServerLog.error("cannot start TLS for \(connection.peer?.host ?? "unknown"): \(error)")
                return connection.close()
            }
        }
        guard !shuttingDown else {
            connection.write(ServerNotice.bye("SHUTDOWN").line)
            connection.closeAfterWriting()
            return
        }
        guard sessions.count < configuration.maxConnections else {
            ServerLog.info("refusing a connection from \(connection.peer?.host ?? "unknown"): --max-connections \(configuration.maxConnections) reached")
            connection.write(ServerNotice.bye("BUSY").line)
            connection.closeAfterWriting()
            return
        }
        ServerLog.event("connect", ["address": connection.peer?.host ?? "unknown", "tls": tls == nil ? "no" : "yes"])
        if preAuthCount >= configuration.maxUnauthenticated { evictOldestUnauthenticated() }
        open(TCPSessionTransport(connection))
    }

    /// Starts a session on `transport` (a socket that was accepted, or a buffer in tests).
    @discardableResult
    func open(_ transport: SessionTransport) -> Session {
        let session = Session(server: self, transport: transport)
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
    private func evictOldestUnauthenticated() {
        // Sessions waiting for a login answer go to the back; one full pass at most.
        var looked = 0
        while looked <= preAuthOrder.count, let key = preAuthOrder.popFirst() {
            looked += 1
            guard let session = sessions[key], session.user == nil, session.closeReason == nil else { continue }
            if session.isLoggingIn {
                preAuthOrder.append(key)
                continue
            }
            session.sayGoodbye("BUSY", reason: .busy)
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
        metrics.add("plistsync_store_bytes", "gauge", "Size of the store on disk, WAL included.", Double(store.sizeBytes()))
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

    private func wakeSessionsWaitingForCommitRoom() {
        // Woken in turn while there is room; the rest stay waiting for the next batch.
        for (key, session) in waitingForCommitRoom {
            guard committer.hasRoom else { return }
            waitingForCommitRoom[key] = nil
            session.commitRoomAvailable()
        }
    }

    // MARK: - Revocation

    /// Closes every connection that logged in with the token whose hash this is.
    func tokenRevoked(_ hash: String) {
        for session in sessions.values where session.tokenHash == hash { session.revoke() }
    }

    /// Applies account changes made by `plistsync user` on this data folder while the server
    /// runs: connections of removed users, or logged in with a password or token that is no
    /// longer valid, are closed; memberships are re-read (a user removed and added again
    /// starts with none); then the epoch is confirmed for the waiting command.
    func checkAccounts(force: Bool = false) {
        guard let epoch = try? store.accountsEpoch(), force || epoch != appliedAccountsEpoch else { return }
        appliedAccountsEpoch = epoch
        var accountsByName: [String: StoredUser?] = [:]
        for session in sessions.values {
            guard let name = session.user, session.closeReason == nil else { continue }
            if accountsByName[name] == nil { accountsByName[name] = .some(try? store.user(named: name)) }
            guard let account = accountsByName[name] ?? nil else {
                session.revoke()
                continue
            }
            if let token = session.tokenHash {
                if !((try? store.tokenExists(hash: token)) ?? false) { session.revoke() }
            } else if account.passwordHash != session.passwordHash {
                session.revoke()
            }
            session.updateAdmin(account.isAdmin)
        }
        do {
            directory.load(try store.collections())
            if configuration.maxBytesPerUser > 0 { directory.loadSizes(try store.storedBytesByCollection()) }
        } catch {
            ServerLog.error("re-reading collections after an account change: \(error)")
        }
        for session in sessions.values { session.recheckAccess() }
        ServerLog.info("account change applied (epoch \(epoch))")
        store.accountChanges?.confirmApplied(epoch: epoch)
    }

    // MARK: - Changes and collections

    private func committed(_ changes: [Change]) {
        changesTotal += changes.count
        for change in changes { directory.committed(change) }
        let second = loop.nowMilliseconds / 1000
        if recentChanges.last?.second == second {
            recentChanges[recentChanges.count - 1].count += changes.count
        } else {
            recentChanges.append((second, changes.count))
            if recentChanges.count > 16 { recentChanges.removeFirst() }
        }
        hub.broadcast(changes)
    }

    // MARK: - Other nodes

    /// Hands this node's committed changes to the feed, and whatever is next in line out.
    private func sequence(_ changes: [Change]) {
        release(feed?.add(changes))
        fillFeedGaps()
    }

    /// Broadcasts the changes the feed let out; whether there were any.
    @discardableResult
    private func release(_ ready: [Change]?) -> Bool {
        guard let ready, !ready.isEmpty else { return false }
        committed(ready)
        return true
    }

    /// Reads from the change log what other nodes committed before the changes held back, and
    /// broadcasts everything now in order.
    private func fillFeedGaps() {
        guard let cluster = store.cluster else { return }
        while let missing = feed?.missing {
            let fetched: [Change]?
            do {
                fetched = try cluster.loggedChanges(missing)
            } catch {
                ServerLog.error("reading changes \(missing.lowerBound)…\(missing.upperBound) from the change log: \(error)")
                return
            }
            guard let fetched else {
                // Pruned from the log (this node was cut off too long): subscribers may have
                // missed changes, so they are sent away to resume with SUB … SINCE.
                ServerLog.error("changes \(missing.lowerBound)…\(missing.upperBound) are no longer in the change log; subscribers resume from the store")
                for session in sessions.values where session.isSubscribed { session.sayGoodbye("SLOW", reason: .slow) }
                release(feed?.skip(through: missing.upperBound))
                continue
            }
            // Not visible yet: the next event or the housekeeping tick tries again.
            guard release(feed?.add(fetched)) else { return }
        }
    }

    private func clusterEvent(_ event: ClusterEvent) {
        switch event.kind {
        case .committed(let seq):
            feed?.committed(through: seq)
            fillFeedGaps()
        case .created(let name, let owner): collectionCreated(name, owner: owner)
        case .dropped(let name): collectionDropped(name)
        case .renamed(let from, let to): collectionRenamed(from, to: to)
        case .granted(let collection, let user, let role): granted(role, to: user, in: collection)
        case .tokenRevoked(let hash): tokenRevoked(hash)
        case .accountsChanged: checkAccounts()
        }
    }

    /// The channel to the other nodes was lost and is back: what it would have said is read
    /// from the store instead.
    private func resync() {
        ServerLog.info("cluster channel connected: re-reading collections, accounts and the change log")
        checkAccounts(force: true)
        catchUpWithStore()
    }

    /// Learns the store's latest seq and delivers what this node has not seen.
    private func catchUpWithStore() {
        guard feed != nil, let seq = try? store.currentSeq() else { return }
        feed?.committed(through: seq)
        fillFeedGaps()
    }

    func collectionCreated(_ name: String, owner: String) {
        directory.created(name, owner: owner)
        for session in sessions.values where session.user == owner {
            session.collectionChanged(name, role: .admin, seq: 0)
        }
    }

    func collectionDropped(_ name: String) {
        let members = directory.members(of: name)
        directory.dropped(name)
        for session in sessions.values { session.collectionDropped(name, wasMember: session.user.map(members.contains) ?? false) }
        if configuration.maxBytesPerUser > 0, let sizes = try? store.storedBytesByCollection() { directory.loadSizes(sizes) }
    }

    func collectionRenamed(_ from: String, to: String) {
        directory.renamed(from, to: to)
        hub.rename(from, to: to)
        hub.rename(Names.conflictsCollection(of: from), to: Names.conflictsCollection(of: to))
        let members = directory.members(of: to)
        for session in sessions.values { session.collectionRenamed(from, to: to, isMember: session.user.map(members.contains) ?? false) }
    }

    func granted(_ role: Role?, to user: String, in collection: String) {
        directory.granted(role, to: user, in: collection)
        let seq = directory.lastSeq(collection)
        for session in sessions.values where session.user == user {
            session.collectionChanged(collection, role: role, seq: seq)
        }
    }

    // MARK: - Housekeeping

    private func housekeep() {
        let now = loop.nowMilliseconds
        let idleLimit = configuration.idleTimeoutSeconds * 1000
        let loginLimit = configuration.preAuthTimeoutSeconds * 1000
        for session in sessions.values where session.closeReason == nil {
            if session.user == nil, loginLimit > 0, now - session.connectedAt > loginLimit {
                session.sayGoodbye("AUTH_TIMEOUT", reason: .authTimeout)
            } else if idleLimit > 0, now - session.lastActivity > idleLimit {
                session.sayGoodbye("IDLE", reason: .idle)
            }
        }
        enforceMemoryBudget()
        // The backstop for a missed inotify event on control/ (or a missed cluster event).
        checkAccounts()
        catchUpWithStore()
        leaveDiskFullModeIfRoom()
        if now >= nextPurgeAt { purgeTombstones() }
    }

    private func purgeTombstones() {
        nextPurgeAt = loop.nowMilliseconds + max(1, min(configuration.tombstoneTTLSeconds, 3600)) * 1000
        let cutoff = Int64(Date().timeIntervalSince1970) - Int64(configuration.tombstoneTTLSeconds)
        committer.submit(.purgeTombstones(updatedBefore: cutoff)) { _ in }
    }

    /// The STATS reply's JSON.
    func statsJSON() -> String {
        let now = loop.nowMilliseconds
        let window = recentChanges.filter { now / 1000 - $0.second < 10 && $0.second < now / 1000 }
        let rate = Double(window.reduce(0) { $0 + $1.count }) / 10.0
        return ValueJSON.encode(.dictionary([
            "connections": .integer(Int64(sessions.count)),
            "subscribers": .integer(Int64(hub.subscriptionCount)),
            "seq": .integer(hub.lastBroadcastSeq),
            "changes_per_second": .real(rate),
            "uptime_seconds": .integer(Int64((now - startedAt) / 1000)),
            "store_bytes": .integer(store.sizeBytes()),
            "collections": .integer(Int64(directory.collections.count)),
            "commits": .integer(Int64(committer.batches)),
            "queued_writes": .integer(Int64(committer.queuedCount)),
        ]))
    }

    // MARK: - Shutdown

    /// Stops accepting, lets in-flight commits finish and answer, says `* BYE SHUTDOWN` to every
    /// client, and lets the loop end.
    public func shutdown() {
        guard !shuttingDown else { return }
        shuttingDown = true
        ServerLog.info("shutting down")
        listener?.close()
        listener = nil
        plaintextListener?.close()
        plaintextListener = nil
        metrics?.close()
        metrics = nil
        for session in sessions.values { session.stopReading() }
        if committer.isIdle { finishShutdown() }
    }

    private func finishShutdown() {
        for session in sessions.values { session.sayGoodbye("SHUTDOWN", reason: .shutdown) }
        if sessions.isEmpty {
            closeHandles()
        } else {
            // Clients that do not read their last bytes are cut off after a grace period.
            graceTimer = LoopTimer.once(on: loop, after: configuration.shutdownGraceSeconds * 1000) { [unowned self] in
                graceTimer = nil
                for session in sessions.values { session.abort() }
            }
        }
    }

    private func closeHandles() {
        logins.close()
        store.cluster?.stopListening()
        controlWatcher?.close()
        controlWatcher = nil
        graceTimer?.close()
        graceTimer = nil
        housekeeping?.close()
        housekeeping = nil
        for watcher in signalWatchers { watcher.close() }
        signalWatchers.removeAll()
        onStopped?()
        onStopped = nil
    }
}
