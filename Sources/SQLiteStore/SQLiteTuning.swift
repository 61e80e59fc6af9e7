import SQLiteKit

/// How much memory each long-lived SQLite connection of the store (the commit connection, the
/// read connection, the accounts connection) may use to keep pages: its own page cache, and a
/// memory map of the file (0: none, pages are read with pread into the cache).
///
/// SQLite's own default is a 2 MB cache: past ~100k records the commit connection's random
/// updates then miss it on most B-tree pages. A map reads without copying, but every page it
/// touches counts in the server's resident memory (shared with the page cache, given back
/// under pressure), so it is off unless asked for.
public struct SQLiteTuning: Sendable, Equatable {
    public var cacheMiB: Int
    public var mmapMiB: Int

    public static let defaultCacheMiB = 32

    public init(cacheMiB: Int = SQLiteTuning.defaultCacheMiB, mmapMiB: Int = 0) {
        self.cacheMiB = cacheMiB
        self.mmapMiB = mmapMiB
    }

    func apply(to db: SQLiteDatabase) throws(StoreError) {
        try db.execute(script: "PRAGMA cache_size=-\(cacheMiB * 1024); PRAGMA mmap_size=\(mmapMiB * 1024 * 1024);")
    }
}
