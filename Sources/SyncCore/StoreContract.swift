import SyncProtocol

/// The record store a server runs on: SQLite in a data folder (`SQLiteStore`) or PostgreSQL
/// shared by several nodes (`PostgresStore`). The server never sees the engine's types or
/// errors, and the stores never see the server: this contract is all they share.
///
/// Reads and account checks are called on the server's read thread one at a time (at start, on
/// the loop thread before anything is served); `commit` on the commit thread, one batch at a
/// time (a separate connection: reads never wait for a commit in flight).
public protocol ServerStore: AnyObject, Sendable {
    /// Identity of the store, stable across restarts (HELLO states it; a restored store gets a
    /// new one).
    func serverID() throws(StoreFailure) -> String
    /// The last seq handed out.
    func currentSeq() throws(StoreFailure) -> Int64
    /// The seq the store was at when it was restored from a backup; nil when it never was.
    /// Clients bringing a restored store forward tell the backup's states (at or below it)
    /// from changes made since (above it).
    func restoredSeq() throws(StoreFailure) -> Int64?
    /// Every collection with its members and the seq of its latest change.
    func collections() throws(StoreFailure) -> [CollectionInfo]
    /// Bytes of live record fields per collection (byte quotas).
    func storedBytesByCollection() throws(StoreFailure) -> [String: Int]
    func record(_ collection: String, _ id: String) throws(StoreFailure) -> RecordState?
    /// The live records in order, and the seq they are current as of.
    func list(_ collection: String) throws(StoreFailure) -> (records: [RecordState], seq: Int64)
    /// The same, read a page at a time from one snapshot (so a large collection is never held
    /// whole); a store without cursors reads it whole (`WholeListing`).
    func listing(_ collection: String) throws(StoreFailure) -> any RecordListing
    /// A page of the live records in order: at most `limit` of those after `after` (from the
    /// first when nil), read by the order's index without going through the ones before, and
    /// the seq the page is current as of.
    func page(_ collection: String, after: RecordCursor?, limit: Int) throws(StoreFailure) -> (records: [RecordState], seq: Int64)
    /// The kept earlier versions of a record, newest first, at most `limit`.
    func versions(_ collection: String, _ id: String, limit: Int) throws(StoreFailure) -> [RecordVersion]
    /// A collection's change log (LOG): the entries `query` asks for, in seq order.
    func log(_ collection: String, _ query: LogQuery) throws(StoreFailure) -> [LoggedChange]
    /// The live records in order as they stood once `seq` was committed (LIST AT); nil when
    /// the log no longer reaches back that far (or `seq` is ahead of the store).
    func list(_ collection: String, at seq: Int64) throws(StoreFailure) -> [RecordState]?
    /// Each of `ids`' state once `seq` was committed (absent: the record did not exist then),
    /// for REVERT; nil when the log no longer reaches back that far.
    func states(_ collection: String, _ ids: [String], at seq: Int64) throws(StoreFailure) -> [String: RecordState]?
    /// Changes after `since`, at most `limit`, with the seq they run up to; nil when changes
    /// after `since` are no longer kept (a purged tombstone).
    func changes(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (changes: [Change], seq: Int64)?
    /// The same page as `* CHANGE` lines (a line connection's SUB replay).
    func changeLines(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (lines: EncodedLines, seq: Int64)?

    func user(named name: String) throws(StoreFailure) -> StoredUser?
    /// Every account, by name.
    func users() throws(StoreFailure) -> [StoredUser]
    /// The user a token (given as its SHA-256 hex) belongs to.
    func tokenOwner(hash: String) throws(StoreFailure) -> String?
    func tokenExists(hash: String) throws(StoreFailure) -> Bool
    /// The tokens of `user` (every user's when nil), oldest first.
    func tokens(of user: String?) throws(StoreFailure) -> [TokenInfo]
    /// The invitation whose secret has this SHA-256 hex, open or not.
    func invitation(hash: String) throws(StoreFailure) -> Invitation?
    /// A collection's invitations, open or not, oldest first.
    func invitations(of collection: String) throws(StoreFailure) -> [Invitation]
    /// Raised with every change to accounts made outside the server (the `user` commands).
    func accountsEpoch() throws(StoreFailure) -> Int64

    /// Applies `operations` in order in one transaction and makes them durable; one outcome
    /// each. When it throws, nothing of the batch was committed.
    func commit(_ operations: [StoreOperation]) throws(StoreFailure) -> [StoreOutcome]

    /// Where the records are, for the log (a folder, a database URL without its password).
    var location: String { get }
    /// Bytes the store takes on disk, for STATS and metrics.
    func sizeBytes() -> Int64
    /// How account changes made outside the server reach it; nil when it only polls.
    var accountChanges: AccountChangeSignal? { get }
    /// Room kept aside to write deletes when the disk fills up; nil for stores not on a local disk.
    var spaceReserve: SpaceReserve? { get }
    /// How nodes sharing this store hear of each other's commits; nil for a store one server
    /// has to itself.
    var cluster: ClusterChannel? { get }
}

extension ServerStore {
    public var cluster: ClusterChannel? { nil }
    public func changeLines(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (lines: EncodedLines, seq: Int64)? {
        try changes(collection, since: since, limit: limit).map { (EncodedLines(changes: $0.changes), $0.seq) }
    }
    public func restoredSeq() throws(StoreFailure) -> Int64? { nil }
}

/// The part of a store that several server nodes share: the change log a node reads other
/// nodes' commits from, and the channel nodes tell each other on (`ClusterEvent`).
public protocol ClusterChannel: AnyObject {
    /// This node's name in the events it sends.
    var node: String { get }
    /// Starts hearing other nodes' events, on the loop thread the store was made for;
    /// `onResync` once listening and after events may have been missed (the channel was lost
    /// and is back): re-read what the events would have said. `onTrouble` says what went wrong
    /// with the channel, for the server's log.
    func listen(onEvent: @escaping (ClusterEvent) -> Void, onResync: @escaping () -> Void, onTrouble: @escaping (String) -> Void)
    func stopListening()
    /// The changes with these seqs, in seq order, from the change log (fewer when some are not
    /// visible yet); nil when the log no longer keeps the first of them.
    func loggedChanges(_ seqs: ClosedRange<Int64>) throws(StoreFailure) -> [Change]?
}

/// A folder that changes when accounts change outside the server, and the place the server
/// says which change it has applied (so `user remove` returns once sessions are closed).
public protocol AccountChangeSignal: Sendable {
    var folder: String { get }
    func confirmApplied(epoch: Int64)
}

/// A file of reserved blocks: removed when a commit finds the disk full (so DELs still fit),
/// made again once there is room.
public protocol SpaceReserve: Sendable {
    var path: String { get }
    /// Makes the reserve; false when there is no room for it.
    @discardableResult func create() -> Bool
    func remove()
    /// Whether the disk has room to make the reserve again and resume writes.
    func hasRoomToResume() -> Bool
}

/// Why the store could not do its part (a request's own rules are `ProtocolError`s).
public struct StoreFailure: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The disk (or a quota) is full: writes wait for room.
        case diskFull
        /// The store did not answer in time (a database stalled or out of reach); nothing was
        /// done.
        case unavailable
        /// Anything else (I/O, a damaged or newer store).
        case failed
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    public var isDiskFull: Bool { kind == .diskFull }
}

extension ServerStore {
    public func listing(_ collection: String) throws(StoreFailure) -> any RecordListing {
        let (records, seq) = try list(collection)
        return WholeListing(records: records, seq: seq)
    }
}

/// A collection's live records in order, handed out a page at a time from one snapshot of the
/// store. Used by one thread at a time (the server's read thread); letting go of it before its
/// end lets go of the snapshot.
public protocol RecordListing: AnyObject, Sendable {
    /// The seq the listing is current as of.
    var seq: Int64 { get }
    /// The next at most `limit` records; fewer means the listing has ended.
    func next(_ limit: Int) throws(StoreFailure) -> [RecordState]
    /// The same page as `* RECORD <collection> …` lines (a line connection's LIST).
    func nextLines(_ limit: Int, collection: String) throws(StoreFailure) -> EncodedLines
}

extension RecordListing {
    public func nextLines(_ limit: Int, collection: String) throws(StoreFailure) -> EncodedLines {
        EncodedLines(records: try next(limit), collection: collection)
    }
}

/// A listing read whole, handed out in pages.
public final class WholeListing: RecordListing, @unchecked Sendable {
    public let seq: Int64
    private var records: ArraySlice<RecordState>

    public init(records: [RecordState], seq: Int64) {
        self.records = records[...]
        self.seq = seq
    }

    public func next(_ limit: Int) -> [RecordState] {
        let page = records.prefix(limit)
        records = records.dropFirst(limit)
        return Array(page)
    }
}
