import SyncCore
import SyncProtocol

/// What is wrong with a simulated server's store right now, set by a seeded run: a full disk,
/// a stall, slow or failing commits. Read by `FaultyStore` (what a commit does) and by the virtual host's
/// lanes (how long store work takes).
public final class StoreFaults: @unchecked Sendable {
    /// While set, commits that need room fail as a full disk does (deletes still fit once the
    /// server has let go of its space reserve).
    public var diskFull = false
    /// The store answers nothing before this virtual time: commits and reads wait for it.
    public var stalledUntil: UInt64 = 0
    /// Milliseconds every commit and read takes on top (a slow disk).
    public var slowness: UInt64 = 0
    /// While set, every commit fails as an I/O error does (`StoreFailure.failed`): nothing of
    /// the batch is written.
    public var commitsFail = false
    /// Commits the store made so far (what it holds changes only with one).
    public internal(set) var commits = 0

    public init() {}

    /// How long store work started at `now` takes.
    func delay(at now: UInt64) -> UInt64 {
        (stalledUntil > now ? stalledUntil - now : 0) + slowness
    }
}

/// A store inside a seeded faulty disk: every call goes to `inner`, but while `faults` say the
/// disk is full a commit that needs room fails with the error a full disk gives
/// (`StoreFailure.diskFull`), while they say commits fail each fails as an I/O error does, and
/// the space reserve is one the faults fill and free.
public final class FaultyStore: ServerStore, @unchecked Sendable {
    public let inner: ServerStore
    private let faults: StoreFaults
    private let reserve: SimulatedReserve

    public init(_ inner: ServerStore, faults: StoreFaults) {
        self.inner = inner
        self.faults = faults
        reserve = SimulatedReserve(faults: faults)
    }

    public func commit(_ operations: [StoreOperation]) throws(StoreFailure) -> [StoreOutcome] {
        if faults.diskFull, !(reserve.isRemoved && operations.allSatisfy(Self.fitsInTheReserve)) {
            throw StoreFailure(.diskFull, "database or disk is full")
        }
        if faults.commitsFail { throw StoreFailure(.failed, "disk I/O error") }
        let outcomes = try inner.commit(operations)
        faults.commits += 1
        return outcomes
    }

    /// What the space reserve's room is for: taking things away, never adding.
    private static func fitsInTheReserve(_ operation: StoreOperation) -> Bool {
        switch operation {
        case .delete, .purgeTombstones, .revokeToken, .touchToken, .revokeInvitation, .dropCollection, .removeUser: true
        default: false
        }
    }

    public var spaceReserve: SpaceReserve? { reserve }
    public func serverID() throws(StoreFailure) -> String { try inner.serverID() }
    public func currentSeq() throws(StoreFailure) -> Int64 { try inner.currentSeq() }
    public func restoredSeq() throws(StoreFailure) -> Int64? { try inner.restoredSeq() }
    public func collections() throws(StoreFailure) -> [CollectionInfo] { try inner.collections() }
    public func storedBytesByCollection() throws(StoreFailure) -> [String: Int] { try inner.storedBytesByCollection() }
    public func record(_ collection: String, _ id: String) throws(StoreFailure) -> RecordState? { try inner.record(collection, id) }
    public func list(_ collection: String) throws(StoreFailure) -> (records: [RecordState], seq: Int64) { try inner.list(collection) }
    public func listing(_ collection: String) throws(StoreFailure) -> any RecordListing { try inner.listing(collection) }
    public func page(_ collection: String, after: RecordCursor?, limit: Int) throws(StoreFailure) -> (records: [RecordState], seq: Int64) {
        try inner.page(collection, after: after, limit: limit)
    }
    public func versions(_ collection: String, _ id: String, limit: Int) throws(StoreFailure) -> [RecordVersion] {
        try inner.versions(collection, id, limit: limit)
    }
    public func changes(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (changes: [Change], seq: Int64)? {
        try inner.changes(collection, since: since, limit: limit)
    }
    public func changeLines(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (lines: EncodedLines, seq: Int64)? {
        try inner.changeLines(collection, since: since, limit: limit)
    }
    public func log(_ collection: String, _ query: LogQuery) throws(StoreFailure) -> [LoggedChange] { try inner.log(collection, query) }
    public func list(_ collection: String, at seq: Int64) throws(StoreFailure) -> [RecordState]? { try inner.list(collection, at: seq) }
    public func states(_ collection: String, _ ids: [String], at seq: Int64) throws(StoreFailure) -> [String: RecordState]? {
        try inner.states(collection, ids, at: seq)
    }
    public func user(named name: String) throws(StoreFailure) -> StoredUser? { try inner.user(named: name) }
    public func users() throws(StoreFailure) -> [StoredUser] { try inner.users() }
    public func tokenOwner(hash: String) throws(StoreFailure) -> String? { try inner.tokenOwner(hash: hash) }
    public func tokenExists(hash: String) throws(StoreFailure) -> Bool { try inner.tokenExists(hash: hash) }
    public func tokens(of user: String?) throws(StoreFailure) -> [TokenInfo] { try inner.tokens(of: user) }
    public func invitation(hash: String) throws(StoreFailure) -> Invitation? { try inner.invitation(hash: hash) }
    public func invitations(of collection: String) throws(StoreFailure) -> [Invitation] { try inner.invitations(of: collection) }
    public func accountsEpoch() throws(StoreFailure) -> Int64 { try inner.accountsEpoch() }
    public var location: String { inner.location }
    public func sizeBytes() -> Int64 { inner.sizeBytes() }
    public var accountChanges: AccountChangeSignal? { inner.accountChanges }
    public var cluster: ClusterChannel? { inner.cluster }
}

/// The room a server keeps for deletes on a full disk: removed when a commit finds the disk
/// full, made again once the faults give room back.
private final class SimulatedReserve: SpaceReserve, @unchecked Sendable {
    private let faults: StoreFaults
    private(set) var isRemoved = false

    init(faults: StoreFaults) {
        self.faults = faults
    }

    var path: String { "simulated-reserve" }

    func create() -> Bool {
        guard !faults.diskFull else { return false }
        isRemoved = false
        return true
    }

    func remove() {
        isRemoved = true
    }

    func hasRoomToResume() -> Bool { !faults.diskFull }
}
