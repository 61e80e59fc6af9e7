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

    /// Applies account changes made by `plistsync user` (or another node) while the server
    /// runs: connections of removed users, or logged in with a password or token that is no
    /// longer valid, are closed; memberships are re-read (a user removed and added again starts
    /// with none); then the epoch is confirmed for the waiting command. What it needs is read
    /// off the loop in one go (`AccountsSnapshot`); a check asked for meanwhile runs after it.
    func checkAccounts(force: Bool = false) {
        guard !accountCheck.running else {
            accountCheck.again = true
            accountCheck.force = accountCheck.force || force
            return
        }
        accountCheck = (true, false, false)
        let applied = appliedAccountsEpoch
        var names = Set<String>()
        var tokens = Set<String>()
        for session in sessions.values where session.closeReason == nil {
            guard let name = session.user else { continue }
            names.insert(name)
            if let token = session.tokenHash { tokens.insert(token) }
        }
        let readSizes = configuration.maxBytesPerUser > 0
        reads.read({ [names, tokens] store throws(StoreFailure) -> AccountsSnapshot? in
            let epoch = try store.accountsEpoch()
            guard force || epoch != applied else { return nil }
            return try AccountsSnapshot(read: store, epoch: epoch, users: names, tokens: tokens, sizes: readSizes)
        }, then: { [unowned self] result in accountsRead(result) })
    }

    private func accountsRead(_ result: Result<AccountsSnapshot?, StoreReads.Failure>) {
        let next = accountCheck
        accountCheck = (false, false, false)
        defer { if next.again { checkAccounts(force: next.force) } }
        switch result {
        case .success(let snapshot?): apply(snapshot)
        case .success(nil): break
        case .failure(.unavailable): break  // the next tick tries again
        case .failure(.failed(let error)): ServerLog.error("re-reading accounts after a change: \(error)")
        }
    }

    /// One check runs at a time, so the epoch it compared against is still the applied one.
    private func apply(_ snapshot: AccountsSnapshot) {
        appliedAccountsEpoch = snapshot.epoch
        for session in sessions.values {
            // A session that logged in while the snapshot was read is judged at the next change.
            guard let name = session.user, session.closeReason == nil, let found = snapshot.users[name] else { continue }
            guard let account = found else {
                session.revoke()
                continue
            }
            if let token = session.tokenHash {
                if !snapshot.liveTokens.contains(token) { session.revoke() }
            } else if account.passwordHash != session.passwordHash {
                session.revoke()
            }
            session.updateAdmin(account.isAdmin)
        }
        directory.load(snapshot.collections)
        if let sizes = snapshot.sizes { directory.loadSizes(sizes) }
        for session in sessions.values { session.recheckAccess() }
        ServerLog.info("account change applied (epoch \(snapshot.epoch))")
        store.accountChanges?.confirmApplied(epoch: snapshot.epoch)
    }
}

/// What an account check reads from the store in one go, off the loop: the accounts of the
/// users logged in, which of their tokens still exist, the collections with their members,
/// and (with byte quotas) their sizes.
struct AccountsSnapshot: Sendable {
    let epoch: Int64
    /// nil for a user who no longer exists.
    var users: [String: StoredUser?] = [:]
    var liveTokens = Set<String>()
    let collections: [CollectionInfo]
    let sizes: [String: Int]?

    init(read store: ServerStore, epoch: Int64, users names: Set<String>, tokens: Set<String>, sizes readSizes: Bool) throws(StoreFailure) {
        self.epoch = epoch
        for name in names { users[name] = .some(try store.user(named: name)) }
        for token in tokens where try store.tokenExists(hash: token) { liveTokens.insert(token) }
        collections = try store.collections()
        sizes = readSizes ? try store.storedBytesByCollection() : nil
    }
}
