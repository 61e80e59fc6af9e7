import EventLoop
import Foundation
import SyncCore
import SyncProtocol
import TLSKit

/// Account changes under a running server: removed users, changed passwords and revoked
/// tokens lose their connections; memberships are read again.
extension Server {
    /// Closes every connection that logged in with the token whose hash this is.
    func tokenRevoked(_ hash: String) {
        for session in sessions.values where session.tokenHash == hash { session.revoke() }
    }

    /// Applies account changes made by `plistsync user` on this data folder while the server
    /// runs: connections of removed users, or logged in with a password or token that is no
    /// longer valid, are closed; memberships are re-read (a user removed and added again
    /// starts with none); then the epoch is confirmed for the waiting command.
    func checkAccounts(force: Bool = false) {
        guard let epoch = try? store.accountsEpoch(), force || epoch != appliedAccountsEpoch else { return }
        appliedAccountsEpoch = epoch
        var accountsByName: [String: StoredUser?] = [:]
        for session in sessions.values {
            guard let name = session.user, session.closeReason == nil else { continue }
            if accountsByName[name] == nil { accountsByName[name] = .some(try? store.user(named: name)) }
            guard let account = accountsByName[name] ?? nil else {
                session.revoke()
                continue
            }
            if let token = session.tokenHash {
                if !((try? store.tokenExists(hash: token)) ?? false) { session.revoke() }
            } else if account.passwordHash != session.passwordHash {
                session.revoke()
            }
            session.updateAdmin(account.isAdmin)
        }
        do {
            directory.load(try store.collections())
            if configuration.maxBytesPerUser > 0 { directory.loadSizes(try store.storedBytesByCollection()) }
        } catch {
            ServerLog.error("re-reading collections after an account change: \(error)")
        }
        for session in sessions.values { session.recheckAccess() }
        ServerLog.info("account change applied (epoch \(epoch))")
        store.accountChanges?.confirmApplied(epoch: epoch)
    }
}
