import PostgresKit
import SyncCore
import SyncProtocol

/// Account and invitation changes made through a server (USER, PASSWD, INVITE, REDEEM), applied
/// in the batch's transaction as the SQLite store applies them.
extension PostgresWriter {
    /// `now`: the batch's time, as the rows store it.
    func applyAccountChange(_ operation: StoreOperation, now: String) throws(PGError) -> StoreOutcome {
        switch operation {
        case .createInvitation(let invitation):
            try connection.query(
                """
                INSERT INTO invitations (hash, collection, role, made_by, note, created_at, expires_at, uses_allowed, uses)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0)
                """, [invitation.hash, invitation.collection, String(invitation.role.rawValue), invitation.madeBy, invitation.note,
                     String(invitation.createdAt), String(invitation.expiresAt), String(invitation.usesAllowed)])
            return .done
        case .revokeInvitation(let collection, let id):
            let rows = try connection.query("SELECT hash FROM invitations WHERE collection = $1 AND left(hash, length($2)) = $2", [collection, id])
            guard rows.count == 1, let hash = rows[0, 0] else {
                return .refused(ProtocolError(rows.count == 0 ? .notFound : .badRequest,
                                              rows.count == 0 ? "no invitation \(id) to \(collection)" : "more than one invitation has id \(id)"))
            }
            try connection.query("DELETE FROM invitations WHERE hash = $1", [hash])
            try connection.query("DELETE FROM tokens WHERE invitation = $1", [hash])
            return try accountsChanged()
        case .redeemInvitation(let hash, let user, let newPasswordHash, let token, let at):
            let rows = try connection.query("SELECT collection, role, expires_at, uses_allowed, uses FROM invitations WHERE hash = $1 FOR UPDATE", [hash])
            guard rows.count == 1, let collection = rows[0, 0] else { return .refused(ProtocolError(.authFailed, "no such invitation")) }
            if let closed = Invitation.closedReason(expiresAt: rows.integer(0, 2), uses: rows.integer(0, 4), usesAllowed: rows.integer(0, 3), at: at) {
                return .refused(closed)
            }
            guard try connection.query("SELECT 1 FROM collections WHERE name = $1", [collection]).count == 1 else {
                return .refused(ProtocolError(.notFound, "no collection \(collection)"))
            }
            if let newPasswordHash {
                let added = try connection.query(
                    "INSERT INTO users (name, password_hash, is_admin, created_at) VALUES ($1, $2, false, $3) ON CONFLICT (name) DO NOTHING",
                    [user, newPasswordHash, now])
                guard added.affected == 1 else { return .refused(ProtocolError(.exists, "user \(user) exists; log in to it instead")) }
            } else {
                guard try connection.query("SELECT 1 FROM users WHERE name = $1", [user]).count == 1 else {
                    return .refused(ProtocolError(.notFound, "no user \(user)"))
                }
            }
            try connection.query(
                """
                INSERT INTO members (collection, user_name, role) VALUES ($1, $2, $3)
                ON CONFLICT (collection, user_name) DO UPDATE SET role = greatest(members.role, excluded.role)
                """, [collection, user, rows[0, 1]])
            try connection.query("UPDATE invitations SET uses = uses + 1 WHERE hash = $1", [hash])
            try connection.query(
                "INSERT INTO tokens (hash, user_name, label, created_at, browser_session, invitation) VALUES ($1, $2, $3, $4, $5, $6)",
                [token.hash, user, token.label, now, token.endsWithBrowser ? "t" : "f", hash])
            return try accountsChanged()
        case .addUser(let name, let passwordHash, let isAdmin):
            let added = try connection.query(
                "INSERT INTO users (name, password_hash, is_admin, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
                [name, passwordHash, isAdmin ? "t" : "f", now])
            guard added.affected == 1 else { return .refused(ProtocolError(.exists, "user \(name) exists")) }
            return try accountsChanged()
        case .setPassword(let name, let passwordHash, let kept):
            guard try connection.query("UPDATE users SET password_hash = $2 WHERE name = $1", [name, passwordHash]).affected == 1 else {
                return .refused(ProtocolError(.notFound, "no user \(name)"))
            }
            try connection.query("DELETE FROM tokens WHERE user_name = $1 AND hash IS DISTINCT FROM $2", [name, kept])
            return try accountsChanged()
        case .removeUser(let name):
            try connection.query("DELETE FROM members WHERE user_name = $1", [name])
            try connection.query("DELETE FROM tokens WHERE user_name = $1", [name])
            guard try connection.query("DELETE FROM users WHERE name = $1", [name]).affected == 1 else {
                return .refused(ProtocolError(.notFound, "no user \(name)"))
            }
            return try accountsChanged()
        case .setServerAdmin(let name, let isAdmin):
            guard try connection.query("UPDATE users SET is_admin = $2 WHERE name = $1", [name, isAdmin ? "t" : "f"]).affected == 1 else {
                return .refused(ProtocolError(.notFound, "no user \(name)"))
            }
            return try accountsChanged()
        default:
            preconditionFailure("not an account change: \(operation)")
        }
    }

    /// Raises the accounts epoch in the batch's transaction (the NOTIFY that tells the other
    /// nodes goes with the batch's events: `ClusterEvent.after`).
    private func accountsChanged() throws(PGError) -> StoreOutcome {
        try connection.query("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'accounts_epoch'")
        return .done
    }
}
