import CSQLite

/// A statement its owner prepares once and keeps (the store's writer: one per kind of write),
/// bound parameter by parameter: no SQL text hashed to find it, no array of values per call.
/// Bind every parameter (1-based), then `run` or `first`; the statement is reset after either,
/// its bindings left to be overwritten by the next run's. Used by one thread at a time, like
/// its connection.
public final class PreparedStatement {
    private let statement: Statement

    init(_ statement: Statement) {
        self.statement = statement
    }

    public func bind(_ index: Int32, _ value: Int64) throws(StoreError) {
        try check(sqlite3_bind_int64(statement.pointer, index, value))
    }

    /// Binds a copy of `text` (SQLite keeps it in the parameter's buffer, reused run to run);
    /// nil binds NULL.
    public func bind(_ index: Int32, _ text: String?) throws(StoreError) {
        guard var text else { return try check(sqlite3_bind_null(statement.pointer, index)) }
        // Through its UTF-8 where it lies (a short string's on the stack): passing a String as
        // a C string would copy a short one into a new array first.
        let status = text.withUTF8 { bytes in
            sqlite3_bind_text(statement.pointer, index, Self.address(of: bytes), Int32(bytes.count), plistsync_sqlite_transient())
        }
        try check(status)
    }

    /// The buffer's bytes as SQLite takes them (an empty one may have no address; a zero length
    /// binds "" from any pointer).
    private static func address(of bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar> {
        UnsafeRawPointer(bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)
    }

    /// Steps to the end, handing each row to `row`; the number of rows changed.
    @discardableResult
    public func run(row: (Row) throws(StoreError) -> Void = { _ in }) throws(StoreError) -> Int {
        defer { sqlite3_reset(statement.pointer) }
        while try statement.step() { try row(Row(statement: statement.pointer)) }
        return Int(sqlite3_changes(statement.database.handle))
    }

    /// Runs with `text` bound at `index` in place (no copy: a record's fields), valid only
    /// while this run lasts.
    @discardableResult
    public func run(bindingInPlace text: String, at index: Int32) throws(StoreError) -> Int {
        var text = text
        let outcome = text.withUTF8 { bytes -> Result<Int, StoreError> in
            Result { () throws(StoreError) -> Int in
                // No destructor: SQLITE_STATIC, SQLite reads the bytes where they are.
                try check(sqlite3_bind_text(statement.pointer, index, Self.address(of: bytes), Int32(bytes.count), nil))
                defer { sqlite3_bind_null(statement.pointer, index) }
                return try run()
            }
        }
        return try outcome.get()
    }

    /// The first row, mapped, or nil when there is none.
    public func first<T>(_ row: (Row) throws(StoreError) -> T) throws(StoreError) -> T? {
        defer { sqlite3_reset(statement.pointer) }
        guard try statement.step() else { return nil }
        return try row(Row(statement: statement.pointer))
    }

    private func check(_ status: Int32) throws(StoreError) {
        guard status == SQLITE_OK else { throw statement.database.error(status) }
    }
}

extension SQLiteDatabase {
    /// A statement of the caller's own, prepared now (an error in its SQL shows at once).
    public func prepare(_ sql: String) throws(StoreError) -> PreparedStatement {
        var pointer: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard status == SQLITE_OK, let pointer else { throw error(status) }
        return PreparedStatement(Statement(pointer: pointer, database: self))
    }
}
