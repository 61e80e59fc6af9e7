import Foundation
import SQLiteKit

/// The server's data folder: where the store file lives, and how a connection to it is opened.
public struct DataFolder: Sendable {
    public let path: String

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
        try migrate(db)
        return db
    }

    private func migrate(_ db: SQLiteDatabase) throws(StoreError) {
        try db.migrate(Schema.migrations)
        try db.transaction(immediate: true) { () throws(StoreError) in
            let serverID = (0..<12).map { _ in String("0123456789abcdefghijklmnopqrstuvwxyz".randomElement()!) }.joined()
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('server_id', ?)", .text(serverID))
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('seq', 0)")
            try db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('purged_seq', 0)")
        }
    }
}
