import EventLoop
import Foundation
import PostgresKit
import SyncCore
import SyncProtocol

/// The server's store in PostgreSQL, shared by any number of `plistsync serve` nodes: records,
/// accounts, grants and tokens live in the database, every node commits through the same `seq`
/// row, and nodes hear of each other's commits by LISTEN/NOTIFY and read them from the change
/// log (`ClusterChannel`).
///
/// Three connections: commits (commit thread), reads (the server's read thread, `StoreReads`;
/// at start the loop thread, before anything is served), notifications (loop thread).
public final class PostgresServerStore: ServerStore, ClusterChannel, @unchecked Sendable {
    /// How long the change log keeps a change: a node cut off from the others for longer sends
    /// its subscribers away to resume from the store.
    static let changeLogSeconds: Int64 = 3600

    public let url: String
    public let node: String
    private let writer: PostgresWriter
    private let reader: PGConnection
    private var listener: PGConnection?
    private var watcher: SocketWatcher?
    private var retryTimer: LoopTimer?
    private var stopped = false
    /// Who hears the other nodes, from `listen` on.
    private var audience: Audience?

    private struct Audience {
        let onEvent: (ClusterEvent) -> Void
        let onResync: () -> Void
        let onTrouble: (String) -> Void
    }
    /// The loop the cluster channel listens on.
    private let loop: EventLoop

    public init(url: String, loop: EventLoop) throws(StoreFailure) {
        self.url = url
        self.loop = loop
        node = String(UUID().uuidString.lowercased().prefix(8))
        do {
            // A node cut off mid-batch must not hold the seq row (every node's commits) for
            // longer than this: PostgreSQL ends its transaction.
            let writing = try PGConnection(url: url, settings: ["SET idle_in_transaction_session_timeout = '10s'"])
            try PostgresSchema.prepare(writing, serverID: UUID().uuidString.lowercased())
            writer = PostgresWriter(connection: writing, node: node)
            reader = try PGConnection(url: url)
        } catch {
            throw Self.failure(error)
        }
    }

    static func failure(_ error: PGError) -> StoreFailure {
        StoreFailure(error.isDiskFull ? .diskFull : .failed, error.description)
    }

    /// Runs a read on the loop thread's connection, connecting again first if it was lost.
    /// A read that finds the connection lost (the database restarted, a proxy dropped it)
    /// connects again and runs once more: reads change nothing, so that is always safe.
    func read<T>(_ body: (PGConnection) throws(PGError) -> T) throws(StoreFailure) -> T {
        do {
            if reader.isBroken { try reader.reconnect() }
            do {
                return try body(reader)
            } catch where error.connectionLost {
                try reader.reconnect()
                return try body(reader)
            }
        } catch {
            throw Self.failure(error)
        }
    }

    private func metaValue(_ key: String) throws(StoreFailure) -> String? {
        try read { connection throws(PGError) in
            let rows = try connection.query("SELECT value FROM meta WHERE key = $1", [key])
            return rows.count > 0 ? rows[0, 0] : nil
        }
    }

    public func serverID() throws(StoreFailure) -> String { try metaValue("server_id") ?? "" }
    public func currentSeq() throws(StoreFailure) -> Int64 { Int64(try metaValue("seq") ?? "") ?? 0 }
    public func accountsEpoch() throws(StoreFailure) -> Int64 { Int64(try metaValue("accounts_epoch") ?? "") ?? 0 }

    public func collections() throws(StoreFailure) -> [CollectionInfo] {
        try read { connection throws(PGError) in
            var byName: [String: CollectionInfo] = [:]
            for info in try connection.query("SELECT name, owner FROM collections").map({ row in
                CollectionInfo(name: row.text(0) ?? "", owner: row.text(1) ?? "", members: [:], lastSeq: 0)
            }) {
                byName[info.name] = info
            }
            let members = try connection.query("SELECT collection, user_name, role FROM members")
            for index in 0..<members.count {
                byName[members[index, 0] ?? ""]?.members[members[index, 1] ?? ""] = Role(rawValue: Int(members.integer(index, 2))) ?? .read
            }
            let latest = try connection.query("SELECT collection, max(seq) FROM records GROUP BY collection")
            for index in 0..<latest.count { byName[latest[index, 0] ?? ""]?.lastSeq = latest.integer(index, 1) }
            return byName.values.sorted { $0.name < $1.name }
        }
    }

    public func storedBytesByCollection() throws(StoreFailure) -> [String: Int] {
        try read { connection throws(PGError) in
            let rows = try connection.query("SELECT collection, sum(octet_length(fields)) FROM records WHERE fields IS NOT NULL GROUP BY collection")
            var sizes: [String: Int] = [:]
            for index in 0..<rows.count { sizes[rows[index, 0] ?? ""] = Int(rows.integer(index, 1)) }
            return sizes
        }
    }

    public func record(_ collection: String, _ id: String) throws(StoreFailure) -> RecordState? {
        try read { connection throws(PGError) in
            let rows = try connection.query("SELECT id, rev, position, fields FROM records WHERE collection = $1 AND id = $2", [collection, id])
            return rows.count > 0 ? rows.recordState(0, id: 0, rev: 1, position: 2, fields: 3) : nil
        }
    }

    /// One statement, so the records and the seq come from one snapshot.
    public func list(_ collection: String) throws(StoreFailure) -> (records: [RecordState], seq: Int64) {
        try read { connection throws(PGError) in
            let rows = try connection.query(
                """
                SELECT m.value, r.id, r.rev, r.position, r.fields FROM meta m LEFT JOIN LATERAL (
                    SELECT id, rev, position, fields FROM records WHERE collection = $1 AND fields IS NOT NULL ORDER BY position, id) r ON true
                WHERE m.key = 'seq'
                """, [collection])
            let seq = rows.count > 0 ? rows.integer(0, 0) : 0
            let records = (0..<rows.count).compactMap { index in
                rows[index, 1] == nil ? nil : rows.recordState(index, id: 1, rev: 2, position: 3, fields: 4)
            }
            return (records, seq)
        }
    }

    /// One statement, so the page and the seq come from one snapshot; the row comparison walks
    /// `records_in_order` from the cursor.
    public func page(_ collection: String, after: RecordCursor?, limit: Int) throws(StoreFailure) -> (records: [RecordState], seq: Int64) {
        try read { connection throws(PGError) in
            let rows = try connection.query(
                """
                SELECT m.value, r.id, r.rev, r.position, r.fields FROM meta m LEFT JOIN LATERAL (
                    SELECT id, rev, position, fields FROM records WHERE collection = $1 AND fields IS NOT NULL
                        AND ($2::text IS NULL OR (position, id) > ($2::text COLLATE "C", $3::text COLLATE "C"))
                    ORDER BY position, id LIMIT $4) r ON true
                WHERE m.key = 'seq'
                """, [collection, after?.position, after?.id ?? "", String(limit)])
            let seq = rows.count > 0 ? rows.integer(0, 0) : 0
            let records = (0..<rows.count).compactMap { index in
                rows[index, 1] == nil ? nil : rows.recordState(index, id: 1, rev: 2, position: 3, fields: 4)
            }
            return (records, seq)
        }
    }

    public func changes(_ collection: String, since: Int64, limit: Int) throws(StoreFailure) -> (changes: [Change], seq: Int64)? {
        try read { connection throws(PGError) -> (changes: [Change], seq: Int64)? in
            let rows = try connection.query(
                """
                SELECT m.value, p.value, r.id, r.rev, r.seq, r.position, r.fields FROM meta m JOIN meta p ON p.key = 'purged_seq'
                LEFT JOIN LATERAL (
                    SELECT id, rev, seq, position, fields FROM records WHERE collection = $1 AND seq > $2 ORDER BY seq LIMIT $3) r ON true
                WHERE m.key = 'seq'
                """, [collection, String(since), String(limit)])
            guard rows.count > 0 else { return ([], 0) }
            if since > 0, since < rows.integer(0, 1) { return nil }
            let changes = (0..<rows.count).compactMap { index -> Change? in
                guard rows[index, 2] != nil else { return nil }
                return Change(collection: collection, seq: rows.integer(index, 4), state: rows.recordState(index, id: 2, rev: 3, position: 5, fields: 6))
            }
            return (changes, rows.integer(0, 0))
        }
    }

    public func user(named name: String) throws(StoreFailure) -> StoredUser? {
        try read { connection throws(PGError) in
            let rows = try connection.query("SELECT name, password_hash, is_admin FROM users WHERE name = $1", [name])
            return rows.count > 0 ? StoredUser(name: rows[0, 0] ?? "", passwordHash: rows[0, 1] ?? "", isAdmin: rows[0, 2] == "t") : nil
        }
    }

    public func invitation(hash: String) throws(StoreFailure) -> Invitation? {
        try read { connection throws(PGError) in
            try connection.query(Self.invitationColumns + " WHERE hash = $1", [hash]).map(Self.readInvitation).first ?? nil
        }
    }

    public func invitations(of collection: String) throws(StoreFailure) -> [Invitation] {
        try read { connection throws(PGError) in
            try connection.query(Self.invitationColumns + " WHERE collection = $1 ORDER BY created_at, hash", [collection]).map(Self.readInvitation).compactMap { $0 }
        }
    }

    private static let invitationColumns =
        "SELECT hash, collection, role, made_by, note, created_at, expires_at, uses_allowed, uses FROM invitations"

    private static func readInvitation(_ row: PGRow) -> Invitation? {
        guard let role = Role(rawValue: Int(row.integer(2))) else { return nil }
        return Invitation(hash: row.text(0) ?? "", collection: row.text(1) ?? "", role: role, madeBy: row.text(3) ?? "", note: row.text(4),
                          createdAt: row.integer(5), expiresAt: row.integer(6), usesAllowed: Int(row.integer(7)), uses: Int(row.integer(8)))
    }

    public func users() throws(StoreFailure) -> [StoredUser] {
        try read { connection throws(PGError) in
            try connection.query("SELECT name, password_hash, is_admin FROM users ORDER BY name").map { row in
                StoredUser(name: row.text(0) ?? "", passwordHash: row.text(1) ?? "", isAdmin: row.text(2) == "t")
            }
        }
    }

    public func tokenOwner(hash: String) throws(StoreFailure) -> String? {
        try read { connection throws(PGError) in
            let rows = try connection.query("SELECT user_name FROM tokens WHERE hash = $1", [hash])
            return rows.count > 0 ? rows[0, 0] : nil
        }
    }

    public func tokenExists(hash: String) throws(StoreFailure) -> Bool { try tokenOwner(hash: hash) != nil }

    public func tokens(of user: String?) throws(StoreFailure) -> [TokenInfo] {
        try read { connection throws(PGError) in
            let rows = try connection.query(
                """
                SELECT hash, user_name, label, created_at, last_used_at, browser_session, invitation FROM tokens
                WHERE $1::text IS NULL OR user_name = $1 ORDER BY made
                """, [user])
            return rows.map { row in
                TokenInfo(hash: row.text(0) ?? "", user: row.text(1) ?? "", label: row.text(2), createdAt: row.integer(3),
                          lastUsedAt: row.isNull(4) ? nil : row.integer(4), endsWithBrowser: row.text(5) == "t",
                          invitation: row.text(6).map { String($0.prefix(TokenInfo.idLength)) })
            }
        }
    }

    public func commit(_ operations: [StoreOperation]) throws(StoreFailure) -> [StoreOutcome] {
        do {
            return try writer.commit(operations)
        } catch {
            throw Self.failure(error)
        }
    }

    /// The database's size as PostgreSQL counts it (every table, not only PlistSync's).
    public func sizeBytes() -> Int64 {
        (try? read { connection throws(PGError) in try connection.query("SELECT pg_database_size(current_database())").integer(0, 0) }) ?? 0
    }

    public var location: String { "PostgreSQL " + Self.redacted(url) + " (node \(node))" }

    /// The URL with any password replaced, for logs.
    public static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url.range(of: "@", range: scheme.upperBound..<url.endIndex),
            let colon = url.range(of: ":", range: scheme.upperBound..<at.lowerBound)
        else { return url }
        return url.replacingCharacters(in: colon.upperBound..<at.lowerBound, with: "***")
    }

    public var accountChanges: AccountChangeSignal? { nil }
    public var spaceReserve: SpaceReserve? { nil }
    public var cluster: ClusterChannel? { self }

    // MARK: - ClusterChannel

    public func loggedChanges(_ seqs: ClosedRange<Int64>) throws(StoreFailure) -> [Change]? {
        try read { connection throws(PGError) -> [Change]? in
            let rows = try connection.query(
                """
                SELECT seq, collection, id, rev, position, fields, bytes_delta FROM change_log WHERE seq BETWEEN $1 AND $2 ORDER BY seq
                """, [String(seqs.lowerBound), String(seqs.upperBound)])
            if rows.count == 0 || rows.integer(0, 0) != seqs.lowerBound {
                // Not there: pruned, or not visible yet (then an older row is still kept).
                let oldest = try connection.query("SELECT min(seq) FROM change_log")
                if oldest.count == 0 || oldest[0, 0] == nil || oldest.integer(0, 0) > seqs.lowerBound { return nil }
            }
            return rows.map { row in
                Change(collection: row.text(1) ?? "", seq: row.integer(0), state: rows.recordState(row.index, id: 2, rev: 3, position: 4, fields: 5),
                       storedBytesDelta: Int(row.integer(6)))
            }
        }
    }

    public func listen(onEvent: @escaping (ClusterEvent) -> Void, onResync: @escaping () -> Void, onTrouble: @escaping (String) -> Void) {
        stopped = false
        audience = Audience(onEvent: onEvent, onResync: onResync, onTrouble: onTrouble)
        connectListener()
    }

    /// Opens the LISTEN connection on the thread pool (a database that does not answer never
    /// holds the loop) and watches its socket; when that fails, tries again in a second. Once
    /// listening, what the channel may have missed before is re-read (`onResync`).
    private func connectListener() {
        guard audience != nil else { return }
        let url = self.url
        loop.runBlocking({ () -> Result<PGConnection, PGError> in
            Result { () throws(PGError) in
                let connection = try PGConnection(url: url)
                try connection.script("LISTEN plistsync")
                return connection
            }
        }, then: { [weak self] result in
            guard let self, !stopped, let audience else { return }
            do {
                let connection = try result.get()
                watcher = try SocketWatcher(loop: loop, socket: connection.socket) { [unowned self] in receive() }
                listener = connection
                audience.onResync()
            } catch {
                audience.onTrouble("cannot listen for other nodes' changes (\(error)); trying again in a second")
                listenLater()
            }
        })
    }

    private func receive() {
        guard let listener else { return }
        do {
            for notification in try listener.notifications() {
                guard let event = ClusterEvent(payload: notification.payload) else {
                    audience?.onTrouble("ignoring an unknown cluster event: \(notification.payload)")
                    continue
                }
                if event.node != node { audience?.onEvent(event) }
            }
        } catch {
            audience?.onTrouble("lost the cluster channel (\(error)); connecting again")
            watcher?.close()
            watcher = nil
            self.listener = nil
            listenLater()
        }
    }

    /// Connects the channel again after a second; once it is back, what it may have missed is
    /// re-read (`onResync`).
    private func listenLater() {
        guard !stopped, retryTimer == nil, audience != nil else { return }
        retryTimer = LoopTimer.once(on: loop, after: 1_000) { [unowned self] in
            retryTimer = nil
            if !stopped { connectListener() }
        }
    }

    public func stopListening() {
        stopped = true
        audience = nil
        watcher?.close()
        watcher = nil
        retryTimer?.close()
        retryTimer = nil
        listener = nil
    }
}
