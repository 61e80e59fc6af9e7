import PostgresKit

/// The tables of a PlistSync store in PostgreSQL, shared by every server node. Text that is
/// ordered or compared (ids, position keys, names) uses the "C" collation: byte order, as in
/// the SQLite store and on the wire.
enum PostgresSchema {
    static let version = 3

    static let tables = """
        -- 'server_id' (made once: every node states it in HELLO), 'seq' (the last seq handed out:
        -- the row every commit locks, so seq order is commit order), 'purged_seq',
        -- 'accounts_epoch' (raised by each account change made outside a server).
        CREATE TABLE IF NOT EXISTS meta (
            key   text COLLATE "C" PRIMARY KEY,
            value text NOT NULL
        );
        CREATE TABLE IF NOT EXISTS users (
            name          text COLLATE "C" PRIMARY KEY,
            password_hash text NOT NULL,
            is_admin      boolean NOT NULL DEFAULT false,
            created_at    bigint NOT NULL
        );
        CREATE TABLE IF NOT EXISTS tokens (
            hash         text COLLATE "C" PRIMARY KEY,
            user_name    text COLLATE "C" NOT NULL REFERENCES users(name) ON DELETE CASCADE,
            label        text,
            created_at   bigint NOT NULL,
            last_used_at bigint,
            made         bigserial
        );
        CREATE TABLE IF NOT EXISTS collections (
            name       text COLLATE "C" PRIMARY KEY,
            owner      text COLLATE "C" NOT NULL,
            created_at bigint NOT NULL
        );
        CREATE TABLE IF NOT EXISTS members (
            collection text COLLATE "C" NOT NULL REFERENCES collections(name) ON DELETE CASCADE ON UPDATE CASCADE,
            user_name  text COLLATE "C" NOT NULL,
            role       integer NOT NULL CHECK (role BETWEEN 1 AND 3),
            PRIMARY KEY (collection, user_name)
        );
        -- One row a record, live or tombstone (fields NULL), as in the SQLite store.
        CREATE TABLE IF NOT EXISTS records (
            collection text COLLATE "C" NOT NULL,
            id         text COLLATE "C" NOT NULL,
            rev        bigint NOT NULL,
            seq        bigint NOT NULL,
            position   text COLLATE "C",
            fields     text,
            updated_at bigint NOT NULL,
            PRIMARY KEY (collection, id)
        );
        CREATE INDEX IF NOT EXISTS records_by_seq ON records (collection, seq);
        CREATE INDEX IF NOT EXISTS records_in_order ON records (collection, position, id) WHERE fields IS NOT NULL;
        -- Earlier states of records' fields (a PUT or DEL replaced them), as in the SQLite store.
        CREATE TABLE IF NOT EXISTS record_versions (
            collection  text COLLATE "C" NOT NULL,
            id          text COLLATE "C" NOT NULL,
            rev         bigint NOT NULL,
            fields      text NOT NULL,
            replaced_at bigint NOT NULL,
            PRIMARY KEY (collection, id, rev)
        );
        CREATE INDEX IF NOT EXISTS record_versions_by_age ON record_versions (replaced_at);
        -- Every change in seq order, kept for an hour: nodes read the changes other nodes
        -- committed from here, so every subscriber on every node gets the same feed.
        CREATE TABLE IF NOT EXISTS change_log (
            seq          bigint PRIMARY KEY,
            collection   text COLLATE "C" NOT NULL,
            id           text COLLATE "C" NOT NULL,
            rev          bigint NOT NULL,
            position     text COLLATE "C",
            fields       text,
            bytes_delta  bigint NOT NULL,
            committed_at bigint NOT NULL
        );
        -- Version 2: browser-session tokens, and invitations (as in the SQLite store).
        ALTER TABLE tokens ADD COLUMN IF NOT EXISTS browser_session boolean NOT NULL DEFAULT false;
        ALTER TABLE tokens ADD COLUMN IF NOT EXISTS invitation text COLLATE "C";
        CREATE TABLE IF NOT EXISTS invitations (
            hash         text COLLATE "C" PRIMARY KEY,
            collection   text COLLATE "C" NOT NULL,
            role         integer NOT NULL CHECK (role BETWEEN 1 AND 3),
            made_by      text COLLATE "C" NOT NULL,
            note         text,
            created_at   bigint NOT NULL,
            expires_at   bigint NOT NULL,
            uses_allowed integer NOT NULL,
            uses         integer NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS invitations_by_collection ON invitations (collection);
        -- Version 3: the change log is the history (kept --history-days, each record's latest
        -- as long as the record): who made each change, and the record's change before it.
        ALTER TABLE change_log ADD COLUMN IF NOT EXISTS prev_seq bigint;
        ALTER TABLE change_log ADD COLUMN IF NOT EXISTS author_user text COLLATE "C";
        ALTER TABLE change_log ADD COLUMN IF NOT EXISTS author_device text COLLATE "C";
        ALTER TABLE change_log ADD COLUMN IF NOT EXISTS author_label text;
        ALTER TABLE change_log ADD COLUMN IF NOT EXISTS via text;
        CREATE INDEX IF NOT EXISTS change_log_by_collection ON change_log (collection, seq);
        CREATE INDEX IF NOT EXISTS change_log_by_record ON change_log (collection, id, seq);
        """

    /// Makes the tables if they are missing, one node at a time (an advisory lock), and the
    /// store's identity; refuses a store made by a newer PlistSync.
    static func prepare(_ connection: PGConnection, serverID: String) throws(PGError) {
        try connection.script("BEGIN; SELECT pg_advisory_xact_lock(7420)")
        do throws(PGError) {
            try connection.script(tables)
            let found = try connection.query("SELECT value FROM meta WHERE key = 'schema_version'")
            if found.count > 0, let stored = Int(found[0, 0] ?? ""), stored > version {
                throw PGError(sqlState: nil, message: "the store has schema version \(stored), newer than this program knows")
            }
            try connection.query(
                """
                INSERT INTO meta (key, value) VALUES ('schema_version', $1), ('server_id', $2), ('seq', '0'), ('purged_seq', '0'),
                    ('accounts_epoch', '0') ON CONFLICT (key) DO NOTHING
                """, [String(version), serverID])
            try connection.query(
                "UPDATE meta SET value = $1 WHERE key = 'schema_version' AND value::integer < $1::integer", [String(version)])
            // Once: the log starts with each record as it stands (LIST AT reaches back to here).
            if try connection.query("SELECT 1 FROM meta WHERE key = 'log_from'").count == 0 {
                try connection.query(
                    """
                    INSERT INTO change_log (seq, collection, id, rev, position, fields, bytes_delta, committed_at)
                    SELECT seq, collection, id, rev, position, fields, 0, updated_at FROM records ON CONFLICT (seq) DO NOTHING
                    """)
                try connection.query("INSERT INTO meta (key, value) SELECT 'log_from', value FROM meta WHERE key = 'seq'")
            }
            try connection.script("COMMIT")
        } catch {
            _ = try? connection.script("ROLLBACK")
            throw error
        }
    }
}
