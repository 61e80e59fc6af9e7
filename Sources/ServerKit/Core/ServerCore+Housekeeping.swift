import SyncCore
import SyncProtocol

/// Once a second: pre-auth and idle deadlines, the memory budget, the account-change backstop,
/// catching up with the store, leaving disk-full mode, purging tombstones.
extension ServerCore {
    func housekeep() {
        let now = clock.milliseconds
        let idleLimit = configuration.idleTimeoutSeconds * 1000
        let loginLimit = configuration.preAuthTimeoutSeconds * 1000
        for session in sessions.values where session.closeReason == nil {
            if session.user == nil, loginLimit > 0, now - session.connectedAt > loginLimit {
                session.sayGoodbye(.authTimeout)
            } else if idleLimit > 0, now - session.lastActivity > idleLimit {
                session.sayGoodbye(.idle)
            }
        }
        enforceMemoryBudget()
        committer.failQueuedIfStalled()
        // The backstop for a missed inotify event on control/ (or a missed cluster event).
        checkAccounts()
        catchUpWithStore()
        leaveDiskFullModeIfRoom()
        if now >= nextPurgeAt { purgeTombstones() }
        if space.claimSizeRead(now: now) { readStoreSize() }
    }

    /// Reads the store's size for STATS and metrics (every 5 s at most; a database's size is a
    /// query).
    func readStoreSize() {
        reads.read({ store in store.sizeBytes() }, then: { [unowned self] result in
            if case .success(let bytes) = result { space.sizeRead(bytes) }
        })
    }
}
