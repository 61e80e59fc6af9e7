import SQLiteKit

/// The record writes' statements, prepared once for the writer's connection.
struct RecordStatements {
    let head: PreparedStatement
    let updateFields: PreparedStatement
    let upsert: PreparedStatement
    let append: PreparedStatement
    let appendLookingUp: PreparedStatement
    let saveSeq: PreparedStatement

    init(_ db: SQLiteDatabase) throws(StoreError) {
        head = try db.prepare("SELECT rev, position, fields, seq FROM records WHERE collection = ?1 AND id = ?2")
        // Sets neither position nor the columns of the order index's condition, so SQLite
        // leaves that index alone. Both take their parameters by the same numbers.
        updateFields = try db.prepare("UPDATE records SET rev = ?3, seq = ?4, fields = ?5, updated_at = ?6 WHERE collection = ?1 AND id = ?2")
        upsert = try db.prepare(
            """
            INSERT INTO records (collection, id, rev, seq, fields, updated_at, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (collection, id) DO UPDATE SET rev = excluded.rev, seq = excluded.seq,
                position = excluded.position, fields = excluded.fields, updated_at = excluded.updated_at
            """)
        append = try db.prepare(
            """
            INSERT INTO changes (seq, collection, id, rev, position, fields, prev_seq, author, at) VALUES (?4, ?1, ?2, ?3, ?7, ?5, ?9, ?8, ?6)
            """)
        // Run before the record's row changes, so prev_seq reads the seq it replaces.
        appendLookingUp = try db.prepare(
            """
            INSERT INTO changes (seq, collection, id, rev, position, fields, prev_seq, author, at)
            VALUES (?4, ?1, ?2, ?3, ?7, ?5, (SELECT seq FROM records WHERE collection = ?1 AND id = ?2), ?8, ?6)
            """)
        saveSeq = try db.prepare("UPDATE meta SET value = max(value, ?1) WHERE key = 'seq'")
    }
}
