import SyncCore
import SyncProtocol

/// The server's decisions, on injected time and work: the sessions, the group committer, the
/// broadcast hub, the directory, the budgets, deadlines and housekeeping. It asks nothing of
/// a loop, a socket or the wall clock: `Server` hosts it on libuv (listeners, signals, the
/// control-folder watcher, the fronts); the test kit's simulated server on virtual time.
///
/// Server-thread object. `start(onStopped:)` begins housekeeping; `shutdown()` drains the
/// in-flight commits, says `* BYE SHUTDOWN` to everyone and then calls `onStopped`.
public final class ServerCore {
    public let configuration: ServerConfiguration
    /// The time the core runs on (the host's loop, or virtual time in the test kit).
    public let clock: any ServerClock
    let store: ServerStore
    private(set) lazy var committer = Committer(
        clock: clock, lane: work.lane(for: .commits), store: store, stallMilliseconds: configuration.storeTimeoutMilliseconds, outlet: self)
    private let work: any ServerWork
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
    /// Once a second while running (`housekeep`).
    private var housekeeping: (any ScheduledCall)?
    /// During shutdown: clients that do not read their last bytes are cut off when it fires.
    var graceCall: (any ScheduledCall)?
    var isShuttingDown = false
    /// Called once a shutdown has finished (the host closes what it holds).
    var onStopped: (() -> Void)?
    let memoryBudget: MemoryBudget
    let preAuth = PreAuthQueue()
    let counters = ServerCounters()
    let commitRoom = CommitRoomWaiters()
    let accountChecks: AccountChecks
    let space: StoreSpace
    let clusterReads = ClusterReads()
    /// When tombstones are purged next (housekeeping).
    private(set) var nextPurgeAt: UInt64 = 0

    /// Serves `store` on `clock` and `work`; nothing runs until `start(onStopped:)`.
    public init(configuration: ServerConfiguration, store: ServerStore, clock: any ServerClock, work: any ServerWork) throws(StoreFailure) {
        self.configuration = configuration
        self.clock = clock
        self.work = work
        self.store = store
        let epoch = try store.accountsEpoch()
        accountChecks = AccountChecks(appliedEpoch: epoch)
        store.accountChanges?.confirmApplied(epoch: epoch)
        memoryBudget = MemoryBudget(maxBufferedBytes: configuration.maxBufferedBytes)
        reads = StoreReads(clock: clock, lane: work.lane(for: .storeReads), store: store, deadlineMilliseconds: configuration.storeTimeoutMilliseconds)
        logins = LoginGate(clock: clock, work: work, reads: reads)
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
        startedAt = clock.milliseconds
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
        #if SIMULATION_MUTATIONS
        if Mutation.active == .diskFullModeNeverLeft { return }
        #endif
        guard space.isDiskFull, store.spaceReserve?.hasRoomToResume() ?? true else { return }
        store.spaceReserve?.create()
        space.roomAgain()
        ServerLog.info("the disk of \(configuration.dataPath) has room again: writes resume")
    }

    /// Begins housekeeping and, on a shared store, listening to the other nodes; `onStopped`
    /// is called once a shutdown has finished.
    public func start(onStopped: @escaping () -> Void = {}) {
        self.onStopped = onStopped
        housekeeping = clock.every(1_000) { [unowned self] in housekeep() }
        store.cluster?.listen(
            onEvent: { [unowned self] event in clusterEvent(event) }, onResync: { [unowned self] in resync() },
            onTrouble: { problem in ServerLog.error(problem) })
        // Commits other nodes made between reading the seq and listening.
        catchUpWithStore()
        purgeTombstones()
    }

    func stopHousekeeping() {
        housekeeping?.cancel()
        housekeeping = nil
    }

    /// The line protocol's port, for invitation links (set by the host once it listens).
    public internal(set) var linePort: Int?

    /// Where HELLO says the HTTP API answers (`plistsync invite` builds its links with it).
    func announceHTTPPort(_ port: Int) {
        helloFields["http_port"] = .integer(Int64(port))
        limitsJSON = ValueJSON.encode(.dictionary(helloFields))
    }

    /// Why a new connection is not let in (the server is shutting down, or at
    /// `--max-connections`), else nil.
    func refusalOfANewConnection(from host: String) -> ByeReason? {
        guard !isShuttingDown else { return .shutdown }
        guard sessions.count < configuration.maxConnections else {
            ServerLog.info("refusing a connection from \(host): --max-connections \(configuration.maxConnections) reached")
            return .busy
        }
        return nil
    }

    /// A connection is let in: at `--max-unauthenticated`, the oldest not logged in is let go.
    func makeRoomForANewConnection() {
        if preAuth.count >= configuration.maxUnauthenticated { preAuth.oldestToEvict { sessions[$0] }?.sayGoodbye(.busy) }
    }

    /// Starts a session on `connection`'s bytes (the test kit's connections in memory).
    public func serve(_ connection: ByteConnection) {
        open(ByteSessionTransport(connection))
    }

    /// Starts a session on `transport` (a socket that was accepted, or a buffer in tests).
    @discardableResult
    public func open(_ transport: SessionTransport) -> Session {
        let session = Session(context: self, transport: transport)
        let key = ObjectIdentifier(session)
        sessions[key] = session
        preAuth.opened(key) { sessions[$0]?.user != nil || sessions[$0] == nil }
        return session
    }

    /// The session's connection is closed: it is forgotten.
    func sessionGone(_ session: Session) {
        sessions[ObjectIdentifier(session)] = nil
        if isShuttingDown, sessions.isEmpty { closeHandles() }
    }

    func sessionLoggedIn(_ session: Session) {
        preAuth.loggedIn()
        counters.loginSucceeded()
    }

    func loginFailed() {
        counters.loginFailed()
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
    public func noteQueued(_ bytes: Int) {
        if memoryBudget.noteQueued(bytes, now: clock.milliseconds) { enforceMemoryBudget() }
    }

    func enforceMemoryBudget() {
        memoryBudget.enforce(on: sessions.values, now: clock.milliseconds)
    }

    /// Purges tombstones older than `--tombstone-ttl` and history older than `--history-days`
    /// (housekeeping: at most hourly).
    func purgeTombstones() {
        nextPurgeAt = clock.milliseconds + max(1, min(configuration.tombstoneTTLSeconds, configuration.historySeconds, 3600)) * 1000
        let now = clock.wallClockSeconds
        let cutoff = now - Int64(configuration.tombstoneTTLSeconds)
        let history = HistoryRetention(now: now, keepSeconds: Int64(configuration.historySeconds))
        committer.submit(.purgeTombstones(updatedBefore: cutoff, history: history)) { _ in }
    }
}

extension ServerCore: CommitterOutlet {
    func committer(_ notice: CommitterNotice) {
        switch notice {
        case .committed(let changes): if feed == nil { broadcast(changes) } else { sequence(changes) }
        case .failed(let error): if error.isDiskFull { enterDiskFullMode() }
        case .room: wakeSessionsWaitingForCommitRoom()
        case .idle: if isShuttingDown { finishShutdown() }
        }
    }
}
