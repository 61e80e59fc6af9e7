import Foundation
import SQLiteKit
import SyncCore
import SyncProtocol

/// Users and tokens, read and changed directly on the store file: the `plistsync user`
/// commands use it whether or not a server runs, and the server reads logins through it.
public final class Accounts {
    public typealias User = StoredUser
    public typealias TokenInfo = SyncCore.TokenInfo

    let db: SQLiteDatabase

    public init(folder: DataFolder) throws(StoreError) {
        db = try folder.open()
    }


    public func user(named name: String) throws(StoreError) -> User? {
        try db.queryFirst("SELECT name, password_hash, is_admin FROM users WHERE name = ?", .text(name)) { row in
            User(name: row.text(0) ?? "", passwordHash: row.text(1) ?? "", isAdmin: row.integer(2) != 0)
        }
    }

    public func users() throws(StoreError) -> [User] {
        try db.query("SELECT name, password_hash, is_admin FROM users ORDER BY name") { row in
            User(name: row.text(0) ?? "", passwordHash: row.text(1) ?? "", isAdmin: row.integer(2) != 0)
        }
    }

    /// The user a token (given as its SHA-256 hex) belongs to.
    public func tokenOwner(hash: String) throws(StoreError) -> String? {
        try db.queryFirst("SELECT user FROM tokens WHERE hash = ?", .text(hash)) { $0.text(0) } ?? nil
    }

    /// The invitation whose secret has this SHA-256 hex.
    public func invitation(hash: String) throws(StoreError) -> Invitation? {
        try db.queryFirst(Self.invitationColumns + " WHERE hash = ?", .text(hash), row: Self.readInvitation) ?? nil
    }

    /// A collection's invitations, oldest first.
    public func invitations(of collection: String) throws(StoreError) -> [Invitation] {
        try db.query(Self.invitationColumns + " WHERE collection = ? ORDER BY created_at, hash", .text(collection), row: Self.readInvitation)
            .compactMap { $0 }
    }

    private static let invitationColumns =
        "SELECT hash, collection, role, made_by, note, created_at, expires_at, uses_allowed, uses FROM invitations"

    private static func readInvitation(_ row: Row) -> Invitation? {
        guard let role = Role(rawValue: Int(row.integer(2))) else { return nil }
        return Invitation(hash: row.text(0) ?? "", collection: row.text(1) ?? "", role: role, madeBy: row.text(3) ?? "", note: row.text(4),
                          createdAt: row.integer(5), expiresAt: row.integer(6), usesAllowed: Int(row.integer(7)), uses: Int(row.integer(8)))
    }

    /// Counts changes to users made outside the server (the `user` commands), so a running
    /// server notices them: each change below raises it in the same transaction.
    public func epoch() throws(StoreError) -> Int64 {
        try db.queryFirst("SELECT value FROM meta WHERE key = 'accounts_epoch'") { $0.integer(0) } ?? 0
    }

    private func raiseEpoch() throws(StoreError) {
        try db.execute(
            "INSERT INTO meta (key, value) VALUES ('accounts_epoch', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1")
    }

    /// The tokens of `user` (every user's when nil), oldest first.
    public func tokens(of user: String?) throws(StoreError) -> [TokenInfo] {
        let columns = "SELECT hash, user, label, created_at, last_used_at, browser_session, invitation FROM tokens"
        let read = { (row: Row) in
            TokenInfo(hash: row.text(0) ?? "", user: row.text(1) ?? "", label: row.text(2), createdAt: row.integer(3),
                      lastUsedAt: row.isNull(4) ? nil : row.integer(4), endsWithBrowser: row.integer(5) != 0,
                      invitation: row.text(6).map { String($0.prefix(TokenInfo.idLength)) })
        }
        if let user { return try db.query(columns + " WHERE user = ? ORDER BY rowid", .text(user), row: read) }
        return try db.query(columns + " ORDER BY rowid", row: read)
    }

    /// Whether the token (given as its SHA-256 hex) still exists.
    public func tokenExists(hash: String) throws(StoreError) -> Bool {
        try db.queryFirst("SELECT 1 FROM tokens WHERE hash = ?", .text(hash)) { _ in true } ?? false
    }

    /// Adds a user; false when the name is taken.
    public func addUser(_ name: String, passwordHash: String, isAdmin: Bool) throws(StoreError) -> Bool {
        try db.transaction(immediate: true) { () throws(StoreError) in
            let added = try db.execute(
                "INSERT OR IGNORE INTO users (name, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?)",
                .text(name), .text(passwordHash), .integer(isAdmin ? 1 : 0), .integer(Int64(Date().timeIntervalSince1970))) == 1
            if added { try raiseEpoch() }
            return added
        }
    }

    /// Replaces a password and revokes the user's tokens; false when there is no such user.
    public func setPassword(_ name: String, passwordHash: String) throws(StoreError) -> Bool {
        try db.transaction(immediate: true) { () throws(StoreError) in
            let changed = try db.execute("UPDATE users SET password_hash = ? WHERE name = ?", .text(passwordHash), .text(name))
            try db.execute("DELETE FROM tokens WHERE user = ?", .text(name))
            try raiseEpoch()
            return changed == 1
        }
    }

    /// Removes a user, their tokens and memberships; false when there is no such user.
    public func removeUser(_ name: String) throws(StoreError) -> Bool {
        try db.transaction(immediate: true) { () throws(StoreError) in
            try db.execute("DELETE FROM members WHERE user = ?", .text(name))
            try db.execute("DELETE FROM tokens WHERE user = ?", .text(name))
            let removed = try db.execute("DELETE FROM users WHERE name = ?", .text(name)) == 1
            try raiseEpoch()
            return removed
        }
    }
}
