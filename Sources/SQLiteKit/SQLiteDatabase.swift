import CSQLite

/// A SQLite connection with a cache of prepared statements: the one small wrapper through which
/// the server's store and the agent's state file use SQLite.
///
/// Not thread-safe: one thread at a time uses a connection (the loop thread, or the single
/// in-flight commit on the thread pool), which is why it is `@unchecked Sendable`.
public final class SQLiteDatabase: @unchecked Sendable {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]

    /// Process-wide settings made once, before the first connection initialises SQLite.
    private static let configured: Void = {
        _ = plistsync_sqlite_disable_memory_statistics()
    }()

    /// Opens (creating if needed) the database file at `path`.
    public init(path: String) throws(StoreError) {
        Self.configured
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw .sqlite(code: status, message: "\(path): \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, 5_000)
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Copies the whole database into a new file at `path` with SQLite's online backup: one
    /// consistent snapshot, while other connections go on writing (WAL readers do not block).
    public func backup(into path: String) throws(StoreError) {
        let target = try SQLiteDatabase(path: path)
        guard let backup = sqlite3_backup_init(target.handle, "main", handle, "main") else { throw target.error(sqlite3_errcode(target.handle)) }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else { throw target.error(stepped == SQLITE_DONE ? finished : stepped) }
        // The copy is a plain file: no WAL left beside it.
        try target.execute(script: "PRAGMA journal_mode=DELETE;")
    }

    /// Runs one or more statements that take no parameters and return no rows.
    public func execute(script sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw .sqlite(code: status, message: text)
        }
    }

    /// Runs a statement that returns no rows; returns the number of rows changed.
    @discardableResult
    public func execute(_ sql: String, _ values: SQLValue...) throws(StoreError) -> Int {
        let statement = try prepared(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {}
        return Int(sqlite3_changes(handle))
    }

    /// Runs a query and maps each row.
    public func query<T>(_ sql: String, _ values: SQLValue..., row: (Row) throws(StoreError) -> T) throws(StoreError) -> [T] {
        let statement = try prepared(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var results: [T] = []
        while try statement.step() { results.append(try row(Row(statement: statement.pointer))) }
        return results
    }

    /// The first row of a query, mapped, or nil when there is none.
    public func queryFirst<T>(_ sql: String, _ values: SQLValue..., row: (Row) throws(StoreError) -> T) throws(StoreError) -> T? {
        let statement = try prepared(sql)
        defer { statement.reset() }
        try statement.bind(values)
        guard try statement.step() else { return nil }
        return try row(Row(statement: statement.pointer))
    }

    /// Runs `body` in a transaction; commits when it returns, rolls back when it throws.
    public func transaction<T>(immediate: Bool = false, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute(script: immediate ? "BEGIN IMMEDIATE" : "BEGIN")
        do {
            let result = try body()
            try execute(script: "COMMIT")
            return result
        } catch {
            try? execute(script: "ROLLBACK")
            throw error
        }
    }

    /// Brings the schema up to date: `migrations[N]` takes `PRAGMA user_version` N to N+1.
    public func migrate(_ migrations: [String]) throws(StoreError) {
        try transaction(immediate: true) { () throws(StoreError) in
            let version = Int(try queryFirst("PRAGMA user_version") { $0.integer(0) } ?? 0)
            guard version <= migrations.count else { throw .schemaTooNew(version) }
            for step in version..<migrations.count {
                try execute(script: migrations[step])
            }
            if version < migrations.count {
                try execute(script: "PRAGMA user_version = \(migrations.count)")
            }
        }
    }

    private func prepared(_ sql: String) throws(StoreError) -> Statement {
        if let cached = statements[sql] { return cached }
        var pointer: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard status == SQLITE_OK, let pointer else { throw error(status) }
        let statement = Statement(pointer: pointer, database: self)
        statements[sql] = statement
        return statement
    }

    func error(_ status: Int32) -> StoreError {
        .sqlite(code: status, message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// A value bound to a statement parameter.
public enum SQLValue: Sendable {
    case integer(Int64)
    case text(String)
    case null
}

/// One result row; valid only inside the `row` closure of a query.
public struct Row {
    let statement: OpaquePointer

    public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    public func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: bytes)
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    /// Bytes of a text or blob column, without making a value of them.
    public func byteCount(_ column: Int32) -> Int { Int(sqlite3_column_bytes(statement, column)) }

    /// Appends a text column's UTF-8 bytes (nothing for NULL) without making a String of them.
    public func appendText(_ column: Int32, to bytes: inout [UInt8]) {
        guard let text = sqlite3_column_text(statement, column) else { return }
        bytes.append(contentsOf: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column))))
    }

    /// Whether a text column is not empty and its first byte and every byte pass the tests.
    public func text(_ column: Int32, first: (UInt8) -> Bool, every: (UInt8) -> Bool) -> Bool {
        guard let text = sqlite3_column_text(statement, column) else { return false }
        let bytes = UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column)))
        guard let head = bytes.first, first(head) else { return false }
        return bytes.allSatisfy(every)
    }
}

/// A prepared statement, kept for the life of its connection.
final class Statement {
    let pointer: OpaquePointer
    unowned let database: SQLiteDatabase

    init(pointer: OpaquePointer, database: SQLiteDatabase) {
        self.pointer = pointer
        self.database = database
    }

    deinit { sqlite3_finalize(pointer) }

    func bind(_ values: [SQLValue]) throws(StoreError) {
        try Self.bind(values, to: pointer, of: database)
    }

    static func bind(_ values: [SQLValue], to pointer: OpaquePointer, of database: SQLiteDatabase) throws(StoreError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .integer(let integer): status = sqlite3_bind_int64(pointer, index, integer)
            case .text(let text): status = sqlite3_bind_text(pointer, index, text, -1, plistsync_sqlite_transient())
            case .null: status = sqlite3_bind_null(pointer, index)
            }
            guard status == SQLITE_OK else { throw database.error(status) }
        }
    }

    /// Advances; true when a row is ready.
    func step() throws(StoreError) -> Bool {
        let status = sqlite3_step(pointer)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error(status)
        }
    }

    func reset() {
        sqlite3_reset(pointer)
        sqlite3_clear_bindings(pointer)
    }
}
