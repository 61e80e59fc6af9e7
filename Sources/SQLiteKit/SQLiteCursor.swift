import CSQLite

/// A query read a few rows at a time from one snapshot: it runs in a read transaction of its
/// own connection, which stays open (and keeps seeing the database as it was) until the rows
/// run out or the cursor is let go. Used by one thread at a time, like `SQLiteDatabase`.
public final class SQLiteCursor: @unchecked Sendable {
    private let database: SQLiteDatabase
    private var statement: OpaquePointer?

    private init(database: SQLiteDatabase, statement: OpaquePointer) {
        self.database = database
        self.statement = statement
    }

    /// Opens a cursor over `sql` on `database` (a connection of its own), after reading the
    /// first row of `prelude` in the same snapshot (e.g. the seq the rows are current to).
    public static func open<T>(
        on database: SQLiteDatabase, prelude: String, first: (Row) -> T, sql: String, _ values: SQLValue...
    ) throws(StoreError) -> (cursor: SQLiteCursor, preludeRow: T?) {
        try database.execute(script: "BEGIN")
        do throws(StoreError) {
            let preludeRow = try database.queryFirst(prelude, row: first)
            var pointer: OpaquePointer?
            let status = sqlite3_prepare_v2(database.handle, sql, -1, &pointer, nil)
            guard status == SQLITE_OK, let pointer else { throw database.error(status) }
            let cursor = SQLiteCursor(database: database, statement: pointer)
            try Statement.bind(values, to: pointer, of: database)
            return (cursor, preludeRow)
        } catch {
            try? database.execute(script: "ROLLBACK")
            throw error
        }
    }

    /// The next at most `limit` rows, mapped; fewer means the query has ended (the snapshot is let go).
    public func next<T>(_ limit: Int, row: (Row) -> T) throws(StoreError) -> [T] {
        guard let statement else { return [] }
        var rows: [T] = []
        rows.reserveCapacity(limit)
        while rows.count < limit {
            let status = sqlite3_step(statement)
            if status == SQLITE_ROW {
                rows.append(row(Row(statement: statement)))
                continue
            }
            finish()
            guard status == SQLITE_DONE else { throw database.error(status) }
            break
        }
        return rows
    }

    /// Hands the next at most `limit` rows to `each`; returns how many there were (fewer: the
    /// query has ended and the snapshot is let go).
    public func next(_ limit: Int, each: (Row) -> Void) throws(StoreError) -> Int {
        guard let statement else { return 0 }
        var count = 0
        while count < limit {
            let status = sqlite3_step(statement)
            if status == SQLITE_ROW {
                each(Row(statement: statement))
                count += 1
                continue
            }
            finish()
            guard status == SQLITE_DONE else { throw database.error(status) }
            break
        }
        return count
    }

    private func finish() {
        guard let statement else { return }
        sqlite3_finalize(statement)
        self.statement = nil
        try? database.execute(script: "ROLLBACK")
    }

    deinit { finish() }
}
