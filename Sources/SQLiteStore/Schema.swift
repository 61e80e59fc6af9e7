/// The store's tables, as readable SQL. `PRAGMA user_version` says which migrations ran.
enum Schema {
    /// Migrations in order; entry N brings a database from version N to N+1.
    static let migrations: [String] = [
        """
        -- Facts about this data folder: 'server_id' (random, made once), 'seq' (the last seq
        -- handed out; since the change log, the larger of it and the log's last seq), 'purged_seq' (the newest seq of a tombstone purged so far: SINCE below
        -- it may have missed a delete, so it answers EXPIRED).
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value ANY NOT NULL
        ) STRICT;

        -- Accounts. password_hash is a self-describing KDF string
        -- ('pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>'); is_admin users may do anything.
        CREATE TABLE users (
            name          TEXT PRIMARY KEY,
            password_hash TEXT NOT NULL,
            is_admin      INTEGER NOT NULL DEFAULT 0,
            created_at    INTEGER NOT NULL
        ) STRICT;

        -- Long-lived login tokens, stored as the SHA-256 of the token, never the token itself.
        CREATE TABLE tokens (
            hash       TEXT PRIMARY KEY,
            user       TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
            label      TEXT,
            created_at INTEGER NOT NULL
        ) STRICT;

        -- Collections and who may use them. role: 1 read, 2 write, 3 admin. The owner is an
        -- admin member from creation on.
        CREATE TABLE collections (
            name       TEXT PRIMARY KEY,
            owner      TEXT NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE members (
            collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
            user       TEXT NOT NULL,
            role       INTEGER NOT NULL CHECK (role BETWEEN 1 AND 3),
            PRIMARY KEY (collection, user)
        ) STRICT;

        -- One row per record, live or tombstone. fields is the canonical JSON of the record's
        -- fields, NULL for a tombstone (position is then NULL too). seq is the server-wide
        -- sequence number of the record's latest change; rev counts its changes.
        CREATE TABLE records (
            collection TEXT NOT NULL,
            id         TEXT NOT NULL,
            rev        INTEGER NOT NULL,
            seq        INTEGER NOT NULL,
            position   TEXT,
            fields     TEXT,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (collection, id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX records_by_seq ON records (collection, seq);
        CREATE INDEX records_in_order ON records (collection, position, id) WHERE fields IS NOT NULL;
        """,
        """
        -- When each token last logged in (seconds since 1970), for the devices list.
        ALTER TABLE tokens ADD COLUMN last_used_at INTEGER;
        """,
        """
        -- Earlier states of records' fields, so a person can look back and restore one: a row
        -- for each PUT or DEL that replaced live fields (not a MOVE), with the rev they had and
        -- when they were replaced. Purged with tombstones (--tombstone-ttl).
        CREATE TABLE record_versions (
            collection  TEXT NOT NULL,
            id          TEXT NOT NULL,
            rev         INTEGER NOT NULL,
            fields      TEXT NOT NULL,
            replaced_at INTEGER NOT NULL,
            PRIMARY KEY (collection, id, rev)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX record_versions_by_age ON record_versions (replaced_at);
        """,
        """
        -- The order index's condition names position only (a tombstone has neither position nor
        -- fields), so a write of fields alone leaves the index as it is.
        DROP INDEX records_in_order;
        CREATE INDEX records_in_order ON records (collection, position, id) WHERE position IS NOT NULL;
        """,
        """
        -- Whether a token ends with its browser session (a console login without "keep me
        -- signed in"), and the invitation that made it (revoking the invitation revokes it).
        ALTER TABLE tokens ADD COLUMN browser_session INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tokens ADD COLUMN invitation TEXT;
        -- Invitations to a collection, by the SHA-256 hex of their secret (never stored): the
        -- role they give, until when, how many times.
        CREATE TABLE invitations (
            hash         TEXT PRIMARY KEY,
            collection   TEXT NOT NULL,
            role         INTEGER NOT NULL,
            made_by      TEXT NOT NULL,
            note         TEXT,
            created_at   INTEGER NOT NULL,
            expires_at   INTEGER NOT NULL,
            uses_allowed INTEGER NOT NULL,
            uses         INTEGER NOT NULL DEFAULT 0
        ) STRICT;
        CREATE INDEX invitations_by_collection ON invitations (collection);
        """,
        """
        -- Who makes changes: one row an account, device (a token's id, 'password' for a
        -- password login) and front; the token's label as it was when first seen. Row 0 is
        -- the unknown author of the states from before the log.
        CREATE TABLE authors (
            id     INTEGER PRIMARY KEY,
            user   TEXT NOT NULL,
            device TEXT NOT NULL,
            label  TEXT,
            via    TEXT NOT NULL,
            UNIQUE (user, device, via)
        ) STRICT;
        INSERT INTO authors (id, user, device, label, via) VALUES (0, '-', '-', NULL, '-');
        -- The change log: every record change in seq order (a PUT, MOVE or DEL, a re-key, a
        -- revert), with who made it and when (seconds since 1970); fields NULL for a delete.
        -- prev_seq is the record's change before it (NULL when none is kept), so one record's
        -- history is a walk back from its row in records. Kept --history-days; each record's
        -- latest change is kept as long as the record is.
        CREATE TABLE changes (
            seq        INTEGER PRIMARY KEY,
            collection TEXT NOT NULL,
            id         TEXT NOT NULL,
            rev        INTEGER NOT NULL,
            position   TEXT,
            fields     TEXT,
            prev_seq   INTEGER,
            author     INTEGER NOT NULL,
            at         INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX changes_by_collection ON changes (collection, seq);
        -- The log starts with each record as it stands; 'log_from' is the first seq a
        -- listing can be rebuilt at (LIST AT), raised as old changes go.
        INSERT INTO changes (seq, collection, id, rev, position, fields, prev_seq, author, at)
            SELECT seq, collection, id, rev, position, fields, NULL, 0, updated_at FROM records;
        INSERT INTO meta (key, value) SELECT 'log_from', coalesce((SELECT value FROM meta WHERE key = 'seq'), 0);
        """,
        """
        -- A SUB's replay reads the log in seq order and keeps each change that is still its
        -- record's latest, so no index of records by seq is kept up at every write (its old
        -- entry's delete was a second random page a write). The log's index carries the id,
        -- so the replay goes from it straight to the record's row.
        DROP INDEX records_by_seq;
        DROP INDEX changes_by_collection;
        CREATE INDEX changes_by_collection ON changes (collection, seq, id);
        """,
        """
        -- A record's row may lag the log: an edit of its fields is committed as its change
        -- alone and written to the row behind, in batches. 'applied_seq': every change up to
        -- it is in its row; a start writes those after it again. (An older release would read
        -- the rows as they lag, so this version mark keeps it from opening the store.)
        INSERT OR IGNORE INTO meta (key, value)
            SELECT 'applied_seq', max(coalesce((SELECT value FROM meta WHERE key = 'seq'), 0), coalesce((SELECT max(seq) FROM changes), 0));
        """,
    ]
}
