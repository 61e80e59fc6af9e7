import SyncCore
import SyncProtocol

/// Account changes under a running server: removed users, changed passwords and revoked
/// tokens lose their connections; memberships are read again.
extension ServerCore {
    /// Closes every connection that logged in with the token whose hash this is.
    func tokenRevoked(_ hash: String) {
        for session in sessions.values where session.tokenHash == hash { session.revoke() }
    }

    /// Applies account changes made by `plistsync user` (or another node) while the server
    /// runs: connections of removed users, or logged in with a password or token that is no
    /// longer valid, are closed; memberships are re-read (a user removed and added again starts
    /// with none) and what changed in them applied; then the epoch is confirmed for the waiting
    /// command. What it needs is read, and compared with the last read, off the loop in one go
    /// (`AccountsSnapshot`); a check asked for meanwhile runs after it.
    func checkAccounts(force: Bool = false) {
        guard accountChecks.begin(force: force) else { return }
        let applied = accountChecks.appliedEpoch
        var names = Set<String>()
        var tokens = Set<String>()
        for session in sessions.values where session.closeReason == nil {
            guard let name = session.user else { continue }
            names.insert(name)
            if let token = session.tokenHash { tokens.insert(token) }
        }
        let readSizes = configuration.maxBytesPerUser > 0
        reads.read({ [names, tokens, membershipBaseline] store throws(StoreFailure) -> AccountsSnapshot? in
            let epoch = try store.accountsEpoch()
            guard force || epoch != applied else { return nil }
            return try AccountsSnapshot(read: store, epoch: epoch, users: names, tokens: tokens, baseline: membershipBaseline, sizes: readSizes)
        }, then: { [unowned self] result in accountsRead(result) })
    }

    private func accountsRead(_ result: Result<AccountsSnapshot?, StoreReads.Failure>) {
        let next = accountChecks.end()
        defer { if next.again { checkAccounts(force: next.force) } }
        switch result {
        case .success(let snapshot?): apply(snapshot)
        case .success(nil): break
        case .failure(.unavailable): membershipBaseline.lost()  // the next tick tries again, with everything
        case .failure(.failed(let error)): ServerLog.error("re-reading accounts after a change: \(error)")
        }
    }

    /// One check runs at a time, so the epoch it compared against is still the applied one.
    private func apply(_ snapshot: AccountsSnapshot) {
        accountChecks.applied(snapshot.epoch)
        let affected: Set<String>? = if case .delta(let delta) = snapshot.memberships { delta.affectedUsers } else { nil }
        var recheck: [Session] = []
        for session in sessions.values {
            // A session that logged in while the snapshot was read is judged at the next change.
            guard let name = session.user, session.closeReason == nil else { continue }
            var mayHaveLostAccess = affected?.contains(name) ?? true
            if let found = snapshot.users[name] {
                guard let account = found else {
                    session.revoke()
                    continue
                }
                if let token = session.tokenHash {
                    if !snapshot.liveTokens.contains(token) { session.revoke() }
                } else if account.passwordHash != session.passwordHash, account.passwordHash != session.nextPasswordHash {
                    session.revoke()
                }
                mayHaveLostAccess = mayHaveLostAccess || account.isAdmin != session.isAdmin
                session.updateAdmin(account.isAdmin)
            }
            if mayHaveLostAccess { recheck.append(session) }
        }
        let summary: String
        switch snapshot.memberships {
        case .delta(let delta):
            directory.apply(delta)
            summary = "\(delta.created.count) made, \(delta.dropped.count) dropped, \(delta.roles.count) roles changed"
        case .whole(let collections):
            directory.load(collections)
            summary = "all \(collections.count) read again"
        }
        if let sizes = snapshot.sizes { directory.loadSizes(sizes) }
        for session in recheck { session.recheckAccess() }
        ServerLog.info("account change applied (epoch \(snapshot.epoch); collections: \(summary))")
        store.accountChanges?.confirmApplied(epoch: snapshot.epoch)
    }
}

/// What an account check reads from the store in one go, off the loop: the accounts of the
/// users logged in, which of their tokens still exist, what changed in the collections and
/// their members, and (with byte quotas) their sizes.
struct AccountsSnapshot: Sendable {
    let epoch: Int64
    /// nil for a user who no longer exists.
    var users: [String: StoredUser?] = [:]
    var liveTokens = Set<String>()
    /// What changed in the collections and their members since the loop last took them in.
    let memberships: MembershipRead
    let sizes: [String: Int]?

    init(read store: ServerStore, epoch: Int64, users names: Set<String>, tokens: Set<String>, baseline: MembershipBaseline, sizes readSizes: Bool) throws(StoreFailure) {
        self.epoch = epoch
        for name in names { users[name] = .some(try store.user(named: name)) }
        for token in tokens where try store.tokenExists(hash: token) { liveTokens.insert(token) }
        memberships = try baseline.check { () throws(StoreFailure) in try store.collections() }
        sizes = readSizes ? try store.storedBytesByCollection() : nil
    }
}
