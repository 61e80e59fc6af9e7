import Foundation
import PlistSyncTesting
import SQLiteKit
import SQLiteStore
import ServerKit
import SyncCore
import SyncProtocol

/// The server of a seeded run: the test kit's `SimulatedServer` (the real `ServerCore` on
/// virtual time, its store inside a faulty disk) over a real SQLite store in a data folder, so
/// the run can back it up, restore it and kill it as `plistsync backup`, `restore` and
/// `kill -9` would. Full disks and stalls are the kit's `StoreFaults`: the server meets them in
/// its own commit and read paths and answers in its own words.
final class SeededServer {
    let folder: String
    let server: SimulatedServer
    var faults: StoreFaults { server.faults }
    /// Backups and restored data folders made so far (`<folder>-backup-N`).
    private var backups = 0
    /// The data folder served now.
    private var dataFolder: String
    /// Restarts and restores so far (what the store holds changes with a commit or one of them).
    private var restarts = 0
    /// The store served now. Its edits wait for their rows until `writeRowsBehind()`.
    private var store: SQLiteServerStore

    init(folder: String, scheduler: Scheduler, users: [(name: String, password: String)]) throws {
        self.folder = folder
        dataFolder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let data = DataFolder(path: folder)
        let store = try SQLiteServerStore(folder: data, rowsBehindAutomatically: false)
        self.store = store
        let accounts = try Accounts(folder: data)
        for user in users {
            _ = try accounts.addUser(user.name, passwordHash: PasswordHasher.hash(user.password, iterations: 1), isAdmin: false)
        }
        var configuration = ServerConfiguration()
        configuration.dataPath = folder
        configuration.idleTimeoutSeconds = 0
        // SQLite stamps tombstones with the real time: the server's wall clock must agree.
        server = try SimulatedServer(scheduler: scheduler, configuration: configuration, store: store, epochSeconds: Int64(Date().timeIntervalSince1970))
    }

    /// Changes to what the store holds so far: commits made, restarts and restores.
    var writes: Int { faults.commits + restarts }

    /// The store writes the edits that wait for their rows (the server's row thread, which a
    /// seeded run drives itself).
    func writeRowsBehind() {
        do {
            try store.applyBehind()
        } catch {
            // As the row thread: the edits stay in the log and wait.
        }
    }

    /// The fields (canonical JSON) of every live record the store holds now, in every
    /// collection, read from its file by a connection of its own: what is committed, whatever
    /// the server is doing (stalled, refusing writes). A record whose row lags the log is its
    /// latest logged change.
    func storedFields() throws -> [String] {
        let path = DataFolder(path: dataFolder).storePath
        if reader?.path != path { reader = (path, try SQLiteDatabase(path: path)) }
        return try reader!.database.query(
            """
            SELECT CASE WHEN c.seq > r.seq THEN c.fields ELSE r.fields END FROM records r
            LEFT JOIN (SELECT collection, id, max(seq) AS seq FROM changes GROUP BY collection, id) m ON m.collection = r.collection AND m.id = r.id
            LEFT JOIN changes c ON c.seq = m.seq
            """) { row in row.text(0) }.compactMap { $0 }
    }

    /// Where the change log and the records disagree, if anywhere: every record's row must be
    /// a logged change of it (same seq, id, rev, place and fields), and any later change of it
    /// one that waits for the row (after `applied_seq`, a live edit in the row's place); every
    /// logged change must name, as the one before it, an earlier change of the same record.
    /// Each change's link is checked once (a check reads the changes logged since the last).
    func logDisagreement() throws -> String? {
        let path = DataFolder(path: dataFolder).storePath
        if reader?.path != path { reader = (path, try SQLiteDatabase(path: path)) }
        // Another data folder (a restart, a restore): its changes are checked from the start.
        let checkedThrough = linksChecked?.path == path ? linksChecked!.through : 0
        let database = reader!.database
        let unlogged = try database.queryFirst(
            """
            SELECT r.collection || '/' || r.id || ' rev ' || r.rev FROM records r LEFT JOIN changes c ON c.seq = r.seq
            WHERE c.seq IS NULL OR c.collection != r.collection OR c.id != r.id OR c.rev != r.rev
                OR c.position IS NOT r.position OR c.fields IS NOT r.fields
            LIMIT 1
            """) { $0.text(0) }
        if let unlogged { return "the log's change of \(unlogged ?? "?") is not the record" }
        let lagging = try database.queryFirst(
            """
            SELECT r.collection || '/' || r.id || ' seq ' || c.seq FROM records r
            JOIN changes c ON c.collection = r.collection AND c.id = r.id AND c.seq > r.seq
            WHERE c.seq <= (SELECT value FROM meta WHERE key = 'applied_seq') OR c.position IS NOT r.position OR c.fields IS NULL
            LIMIT 1
            """) { $0.text(0) }
        if let lagging { return "the row of \(lagging ?? "?") lags a change that cannot wait for it" }
        let broken = try database.queryFirst(
            """
            SELECT c.collection || '/' || c.id || ' seq ' || c.seq FROM changes c JOIN changes p ON p.seq = c.prev_seq
            WHERE c.seq > ? AND (p.seq >= c.seq OR p.collection != c.collection OR p.id != c.id OR p.rev >= c.rev)
            LIMIT 1
            """, .integer(checkedThrough)) { $0.text(0) }
        if broken == nil { linksChecked = (path, try database.queryFirst("SELECT coalesce(max(seq), 0) FROM changes") { $0.integer(0) } ?? 0) }
        return broken.map { "the change before \($0 ?? "?") is not an earlier change of its record" }
    }

    /// The connection `storedFields` reads with, to the data folder served now.
    private var reader: (path: String, database: SQLiteDatabase)?
    /// The data folder and the last seq whose change's link `logDisagreement` has checked.
    private var linksChecked: (path: String, through: Int64)?

    /// `plistsync backup` while serving: the path of a consistent copy of the store.
    func backUp() throws -> String {
        backups += 1
        let file = folder + "-backup-\(backups)"
        try DataFolder(path: dataFolder).backup(to: file)
        return file
    }

    /// Stops the server (every client is cut off), `plistsync restore`s the backup (a new server
    /// id), and serves again.
    func restore(from file: String) throws {
        try serveAgain { target in try DataFolder(path: target).restore(from: file) }
    }

    /// The server process is killed (`kill -9`) and started again on what its disk holds: every
    /// client loses its connection, and the server its memory (subscriptions, paces, caches, a
    /// commit a stall held). The data folder copied as it stands is what a restart finds.
    func crashAndRestart() throws {
        let current = dataFolder
        try serveAgain { target in try FileManager.default.copyItem(atPath: current, toPath: target) }
    }

    /// Ends the server, makes a new data folder with `fill` and serves it. A new folder: a
    /// process keeps the lock on a data folder it served until it exits.
    private func serveAgain(_ fill: (String) throws -> Void) throws {
        restarts += 1
        backups += 1
        let target = folder + "-backup-\(backups)"
        try fill(target)
        server.stop()
        dataFolder = target
        store = try SQLiteServerStore(folder: DataFolder(path: dataFolder), rowsBehindAutomatically: false)
        try server.start(on: store)
    }

    func connect(deliver: @escaping ([[UInt8]]) -> Void) -> SimulatedConnection {
        server.connect(deliver: deliver)
    }

    /// Ends every session and the server; the data folders go.
    func close() {
        server.stop()
        reader = nil
        try? FileManager.default.removeItem(atPath: folder)
        for index in 0...backups { try? FileManager.default.removeItem(atPath: folder + "-backup-\(index)") }
    }
}

/// A simulation that could not go on (the server hung), as opposed to an invariant broken.
struct SimulationFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
