import SQLiteKit
import SyncCore
import SyncProtocol

/// The server's store in a data folder: one SQLite file (WAL), a commit connection, a read
/// connection and the account queries, behind `ServerStore`. Opening it takes the folder's
/// server lock (one server a folder).
public final class SQLiteServerStore: ServerStore, @unchecked Sendable {
    public let folder: DataFolder
    private let writer: RecordWriter
    private let rows: RowApplier
    private let reader: RecordReader
    private let accounts: Accounts
    private let control: ControlChannel
    private let lock: ServerLock
    /// Files whose mode could not be made owner-only, for the server to warn about.
    public let permissionProblems: [String]

    /// `rowsBehindAutomatically` off: edits wait for their rows until `applyBehind()` (the
    /// simulation chooses when).
    public init(folder: DataFolder, rowsBehindAutomatically: Bool = true) throws(StoreFailure) {
        self.folder = folder
        let control = ControlChannel(folder: folder)
        self.control = control
        let locked = try Self.run { () throws(StoreError) in try control.lockForServer() }
        guard let locked else { throw StoreFailure(.failed, "another plistsync server is using \(folder.path)") }
        lock = locked
        let writer = try Self.run { () throws(StoreError) in try RecordWriter(folder: folder) }
        self.writer = writer
        reader = try Self.run { () throws(StoreError) in try RecordReader(folder: folder, pending: writer.pending) }
        accounts = try Self.run { () throws(StoreError) in try Accounts(folder: folder) }
        permissionProblems = folder.restrictPermissions()
        // Last: its thread runs until deinit, which an init that threw would never reach.
        rows = RowApplier(writer: writer, automatic: rowsBehindAutomatically)
    }

    deinit { rows.stop() }

    /// Edits committed whose rows are not written yet.
    public var editsWaitingForRows: Int { writer.pending.waitingCount }

    /// Writes every waiting edit to its row now.
    public func applyBehind() throws(StoreFailure) {
        try Self.run { () throws(StoreError) in try rows.applyBehind() }
    }

    private static func failure(_ error: StoreError) -> StoreFailure {
        StoreFailure(error.isDiskFull ? .diskFull : .failed, error.description)
    }

    /// Runs a store call, its SQLite error turned into the server's.
    private static func run<T>(_ body: () throws(StoreError) -> T) throws(StoreFailure) -> T {
        do {
            return try body()
        } catch {
            throw Self.failure(error)
        }
    }

    public func serverID() throws(StoreFailure) -> String { try Self.run { () throws(StoreError) in try reader.serverID() } }
    public func currentSeq() throws(StoreFailure) -> Int64 { try Self.run { () throws(StoreError) in try reader.currentSeq() } }
    public func restoredSeq() throws(StoreFailure) -> Int64? { try Self.run { () throws(StoreError) in try reader.restoredSeq() } }
    public func collections() throws(StoreFailure) -> [CollectionInfo] { try Self.run { () throws(StoreError) in try reader.collections() } }
    public func storedBytesByCollection() throws(StoreFailure) -> [String: Int] {
        try Self.run { () throws(StoreError) in try reader.storedBytesByCollection() }
    }
    public func record(_ collection: String, _ id: String) throws(StoreFailure) -> RecordState? {
        try Self.run { () throws(StoreError) in try reader.record(collection, id) }
    }
    public func list(_ collection: String) throws(StoreFailure) -> (records: [RecordState], seq: Int64) {
        try Self.run { () throws(StoreError) in try reader.list(collection) }
    }
    /// On a connection of its own (with a small page cache: a listing reads each page once),
    /// unless `SQLiteListing.maxOpen` snapshots are open: then read whole.
    public func listing(_ collection: String) throws(StoreFailure) -> any RecordListing {
        guard SQLiteListing.reserve() else {
            let (records, seq) = try list(collection)
            return WholeListing(records: records, seq: seq)
        }
        return try Self.run { () throws(StoreError) in
            do throws(StoreError) {
                return try reader.listing(collection, on: try folder.openReader(cacheKiB: 2_048))
            } catch {
                SQLiteListing.unreserve()
                throw error
            }
        }
    }
    public func versions(_ collection: String, _ id: String, limit: Int) throws(StoreFailure) -> [RecordVersion] {
        try Self.run { () throws(StoreError) in try reader.versions(collection, id, limit: limit) }
    }
    public func log(_ collection: String, _ query: LogQuery) throws(StoreFailure) -> [LoggedChange] {
        try Self.run { () throws(StoreError) in try reader.log(collection, query) }
    }
    public func list(_ collection: String, at seq: Int64) throws(StoreFailure) -> [RecordState]? {
        try Self.run { () throws(StoreError) in try reader.list(collection, at: seq) }
    }
    public func states(_ collection: String, _ ids: [String], at seq: Int64) throws(StoreFailure) -> [String: RecordState]? {
        try Self.run { () throws(StoreError) in try reader.states(collection, ids, at: seq) }
    }
    public func page(_ collection: String, after: RecordCursor?, limit: Int) throws(StoreFailure) -> (records: [RecordState], seq: Int64) {
        try Self.run { () throws(StoreError) in try reader.page(collection, after: after, limit: limit) }
    }
    public func changes(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (changes: [Change], seq: Int64)? {
        try Self.run { () throws(StoreError) in try reader.changes(collection, since: since, limit: limit) }
    }
    public func changeLines(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (lines: EncodedLines, seq: Int64)? {
        try Self.run { () throws(StoreError) in try reader.changeLines(collection, since: since, limit: limit) }
    }

    public func user(named name: String) throws(StoreFailure) -> StoredUser? { try Self.run { () throws(StoreError) in try accounts.user(named: name) } }
    public func invitation(hash: String) throws(StoreFailure) -> Invitation? { try Self.run { () throws(StoreError) in try accounts.invitation(hash: hash) } }
    public func invitations(of collection: String) throws(StoreFailure) -> [Invitation] {
        try Self.run { () throws(StoreError) in try accounts.invitations(of: collection) }
    }
    public func users() throws(StoreFailure) -> [StoredUser] { try Self.run { () throws(StoreError) in try accounts.users() } }
    public func tokenOwner(hash: String) throws(StoreFailure) -> String? { try Self.run { () throws(StoreError) in try accounts.tokenOwner(hash: hash) } }
    public func tokenExists(hash: String) throws(StoreFailure) -> Bool { try Self.run { () throws(StoreError) in try accounts.tokenExists(hash: hash) } }
    public func tokens(of user: String?) throws(StoreFailure) -> [TokenInfo] { try Self.run { () throws(StoreError) in try accounts.tokens(of: user) } }
    public func accountsEpoch() throws(StoreFailure) -> Int64 { try Self.run { () throws(StoreError) in try accounts.epoch() } }

    public func commit(_ operations: [StoreOperation]) throws(StoreFailure) -> [StoreOutcome] {
        try Self.run { () throws(StoreError) in try rows.commit(operations) }
    }

    public func sizeBytes() -> Int64 { folder.storeSizeBytes() }
    public var location: String { folder.path }

    public var accountChanges: AccountChangeSignal? { ControlSignal(control: control) }
    public var spaceReserve: SpaceReserve? { Ballast(folder: folder) }

    /// The data folder's `control/` doorbell.
    private struct ControlSignal: AccountChangeSignal {
        let control: ControlChannel
        var folder: String { control.folder.controlPath }
        func confirmApplied(epoch: Int64) { control.confirmApplied(epoch: epoch) }
    }

    /// The data folder's `space-reserve` file.
    private struct Ballast: SpaceReserve {
        let folder: DataFolder
        var path: String { folder.ballastPath }
        @discardableResult func create() -> Bool { folder.createBallast() }
        func remove() { folder.removeBallast() }
        func hasRoomToResume() -> Bool {
            guard let free = folder.freeBytes() else { return false }
            return free >= 2 * Int64(DataFolder.ballastBytes)
        }
    }
}
