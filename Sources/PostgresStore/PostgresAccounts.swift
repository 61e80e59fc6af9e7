import Foundation
import PostgresKit
import SyncCore

/// Users in a PostgreSQL store, changed directly in the database by `plistsync user`: each
/// change raises the accounts epoch and tells every node (NOTIFY), in its transaction, so
/// every node closes the connections it revokes.
public final class PostgresAccounts {
    private let connection: PGConnection

    public init(url: String) throws(StoreFailure) {
        do {
            connection = try PGConnection(url: url)
            try PostgresSchema.prepare(connection, serverID: UUID().uuidString.lowercased())
        } catch {
            throw PostgresServerStore.failure(error)
        }
    }

    public func users() throws(StoreFailure) -> [StoredUser] {
        try run { () throws(PGError) in
            try connection.query("SELECT name, password_hash, is_admin FROM users ORDER BY name").map { row in
                StoredUser(name: row.text(0) ?? "", passwordHash: row.text(1) ?? "", isAdmin: row.text(2) == "t")
            }
        }
    }

    /// Adds a user; false when the name is taken.
    public func addUser(_ name: String, passwordHash: String, isAdmin: Bool) throws(StoreFailure) -> Bool {
        try change { () throws(PGError) in
            try connection.query(
                "INSERT INTO users (name, password_hash, is_admin, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
                [name, passwordHash, isAdmin ? "t" : "f", String(Int64(Date().timeIntervalSince1970))]).affected == 1
        }
    }

    /// Replaces a password and revokes the user's tokens; false when there is no such user.
    public func setPassword(_ name: String, passwordHash: String) throws(StoreFailure) -> Bool {
        try change { () throws(PGError) in
            let changed = try connection.query("UPDATE users SET password_hash = $2 WHERE name = $1", [name, passwordHash]).affected == 1
            try connection.query("DELETE FROM tokens WHERE user_name = $1", [name])
            return changed
        }
    }

    /// Removes a user, their tokens and memberships; false when there is no such user.
    public func removeUser(_ name: String) throws(StoreFailure) -> Bool {
        try change { () throws(PGError) in
            try connection.query("DELETE FROM members WHERE user_name = $1", [name])
            return try connection.query("DELETE FROM users WHERE name = $1", [name]).affected == 1
        }
    }

    /// Runs `body` in a transaction that raises the epoch and notifies the nodes when it changed something.
    private func change(_ body: () throws(PGError) -> Bool) throws(StoreFailure) -> Bool {
        try run { () throws(PGError) in
            try connection.script("BEGIN")
            do throws(PGError) {
                let changed = try body()
                if changed {
                    try connection.query("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'accounts_epoch'")
                    try connection.query("SELECT pg_notify('plistsync', $1)", [ClusterEvent(node: "-", .accountsChanged).payload])
                }
                try connection.script("COMMIT")
                return changed
            } catch {
                _ = try? connection.script("ROLLBACK")
                throw error
            }
        }
    }

    private func run<T>(_ body: () throws(PGError) -> T) throws(StoreFailure) -> T {
        do {
            return try body()
        } catch {
            throw PostgresServerStore.failure(error)
        }
    }
}
