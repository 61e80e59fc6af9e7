import Foundation
import SQLiteKit

/// The server's data folder: where the store file lives, and how a connection to it is opened.
public struct DataFolder: Sendable {
    public let path: String
    /// Page cache and memory map of each long-lived connection (`serve --sqlite-cache-mb`, `--sqlite-mmap-mb`).
    public var tuning = SQLiteTuning()

    public init(path: String) {
        self.path = path
    }

    /// The SQLite file holding records, accounts and collections.
    public var storePath: String { (path as NSString).appendingPathComponent("store.sqlite") }

    /// Bytes the store takes on disk, WAL included.
    public func storeSizeBytes() -> Int64 {
        [storePath, storePath + "-wal"].reduce(0) { total, file in
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
            return total + size
        }
    }

    /// A file of zeros kept beside the store so that a full disk still leaves room to delete:
    /// the server removes it when a commit fails for lack of space (then only DEL is let through)
    /// and makes it again once the disk has room.
    public var ballastPath: String { (path as NSString).appendingPathComponent("space-reserve") }
    public static let ballastBytes = 1 << 20

    /// Makes the reserve file if it is missing; false when there is no room for it.
    @discardableResult
    public func createBallast() -> Bool {
        if FileManager.default.fileExists(atPath: ballastPath) { return true }
        let descriptor = Glibc.open(ballastPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        // posix_fallocate reserves real blocks (a sparse file would reserve nothing).
        guard posix_fallocate(descriptor, 0, off_t(Self.ballastBytes)) == 0, fsync(descriptor) == 0 else {
            unlink(ballastPath)
            return false
        }
        return true
    }

    /// Gives the reserve's room back to the store.
    public func removeBallast() {
        unlink(ballastPath)
    }

    /// Bytes free on the data folder's file system for this user, nil when unknown.
    public func freeBytes() -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Writes a consistent copy of the store to `file` (a new file; the server may be running).
    public func backup(to file: String) throws(StoreError) {
        let temp = file + ".partial"
        unlink(temp)
        do {
            try open().backup(into: temp)
        } catch {
            unlink(temp)
            throw error
        }
        Self.sync(temp)
        guard rename(temp, file) == 0 else {
            unlink(temp)
            throw .dataDirectory("cannot write \(file): \(String(cString: strerror(errno)))")
        }
    }

    /// Replaces the store with a backup made by `backup(to:)`; the server must be stopped.
    /// The backup is checked first (a PlistSync store, not newer than this release, intact).
    public func restore(from file: String) throws(StoreError) {
        guard !ControlChannel(folder: self).serverIsRunning() else { throw .dataDirectory("a server is serving \(path): stop it first") }
        guard FileManager.default.fileExists(atPath: file) else { throw .dataDirectory("no backup at \(file)") }
        let checked = try SQLiteDatabase(path: file)
        let version = try checked.queryFirst("PRAGMA user_version") { $0.integer(0) } ?? 0
        guard version > 0 else { throw .dataDirectory("\(file) is not a PlistSync store") }
        guard version <= Schema.migrations.count else { throw .schemaTooNew(Int(version)) }
        let verdict = try checked.queryFirst("PRAGMA integrity_check") { $0.text(0) } ?? nil
        guard verdict == "ok" else { throw .dataDirectory("\(file) is damaged: \(verdict ?? "unknown")") }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .dataDirectory("cannot create \(path): \(error.localizedDescription)")
        }
        let temp = storePath + ".restoring"
        unlink(temp)
        do {
            try checked.backup(into: temp)
        } catch {
            unlink(temp)
            throw error
        }
        // A new server id: agents see that the store changed under them (its seqs went back)
        // and reconcile from scratch instead of waiting for seqs they think they have.
        do {
            let restored = try SQLiteDatabase(path: temp)
            // A backup made by an earlier release is brought up to this one's tables first.
            try migrate(restored)
            try restored.execute("UPDATE meta SET value = ? WHERE key = 'server_id'", .text(Self.newServerID()))
            // Where the backup ends: agents push what they synced since as edits, and take
            // changes made after the restore (above this seq) as news.
            try restored.execute("INSERT OR REPLACE INTO meta (key, value) SELECT 'restored_seq', (\(RecordReader.currentSeqQuery))")
        } catch {
            unlink(temp)
            throw error
        }
        Self.sync(temp)
        // The old WAL belongs to the old store: it must not be replayed into the restored one.
        unlink(storePath + "-wal")
        unlink(storePath + "-shm")
        guard rename(temp, storePath) == 0 else { throw .dataDirectory("cannot replace \(storePath): \(String(cString: strerror(errno)))") }
        restrictPermissions()
    }

    /// Makes a file's bytes durable before it is renamed into place.
    private static func sync(_ path: String) {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// Where the account commands and a running server signal each other (see `ControlChannel`).
    public var controlPath: String { (path as NSString).appendingPathComponent("control") }

    /// Opens a connection in WAL mode with full fsync, creating and migrating the store as needed.
    public func open() throws(StoreError) -> SQLiteDatabase {
        do {
            // Owner-only: the store holds password hashes.
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .dataDirectory("cannot create \(path): \(error.localizedDescription)")
        }
        let db = try SQLiteDatabase(path: storePath)
        // FULL: the WAL is fsynced at every commit, so an OK survives kill -9 and power loss.
        try db.execute(script: "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
        try tuning.apply(to: db)
        try migrate(db)
        return db
    }

    /// Opens one more connection to the store made already, for reading only (a listing's cursor).
    public func openReader(cacheKiB: Int) throws(StoreError) -> SQLiteDatabase {
        let db = try SQLiteDatabase(path: storePath)
        try db.execute(script: "PRAGMA cache_size=-\(cacheKiB); PRAGMA query_only=ON;")
        return db
    }

    /// Makes the folder and the folders in it owner-only (0700) and every file in them 0600
    /// (the store, the space reserve, the quickstart's admin password…), whatever mode they were made with
    /// (a systemd StateDirectory is 0755 by default; SQLite creates files 0644 under umask 022).
    /// Returns one line per path it could not fix, for the caller to warn about.
    @discardableResult
    public func restrictPermissions() -> [String] {
        var problems: [String] = []
        func restrict(_ file: String, _ mode: mode_t) {
            var info = stat()
            guard stat(file, &info) == 0 else { return }
            if info.st_mode & 0o777 != mode, chmod(file, mode) != 0 {
                problems.append("cannot make \(file) mode \(String(mode, radix: 8)): \(String(cString: strerror(errno)))")
            }
        }
        func restrictContents(of folder: String) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                let entry = (folder as NSString).appendingPathComponent(name)
                var info = stat()
                guard lstat(entry, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFREG: restrict(entry, 0o600)
                case S_IFDIR:
                    restrict(entry, 0o700)
                    restrictContents(of: entry)
                default: continue
                }
            }
        }
        restrict(path, 0o700)
        restrictContents(of: path)
        return problems
    }

    /// A random id for a store (HELLO states it).
    static func newServerID() -> String {
        (0..<12).map { _ in String("0123456789abcdefghijklmnopqrstuvwxyz".randomElement()!) }.joined()
    }

    private func migrate(_ db: SQLiteDatabase) throws(StoreError) {
        try db.migrate(Schema.migrations)
        try db.transaction(immediate: true) { () throws(StoreError) in
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('server_id', ?)", .text(Self.newServerID()))
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('seq', 0)")
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('purged_seq', 0)")
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('accounts_epoch', 0)")
        }
    }
}
