import EventLoop
import Foundation
import SyncCore
import SyncProtocol
import TLSKit

/// Once a second: pre-auth and idle deadlines, the memory budget, the account-change backstop,
/// catching up with the store, leaving disk-full mode, purging tombstones.
extension Server {
    func housekeep() {
        let now = loop.nowMilliseconds
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
        if now >= nextSizeReadAt { readStoreSize() }
    }

    /// Reads the store's size for STATS and metrics (every 5 s at most; a database's size is a
    /// query).
    func readStoreSize() {
        nextSizeReadAt = loop.nowMilliseconds + 5_000
        reads.read({ store in store.sizeBytes() }, then: { [unowned self] result in
            if case .success(let bytes) = result { storeBytes = bytes }
        })
    }

    func purgeTombstones() {
        nextPurgeAt = loop.nowMilliseconds + max(1, min(configuration.tombstoneTTLSeconds, 3600)) * 1000
        let cutoff = Int64(Date().timeIntervalSince1970) - Int64(configuration.tombstoneTTLSeconds)
        committer.submit(.purgeTombstones(updatedBefore: cutoff)) { _ in }
    }

    /// The STATS reply's JSON.
    func statsJSON() -> String {
        let now = loop.nowMilliseconds
        let window = recentChanges.filter { now / 1000 - $0.second < 10 && $0.second < now / 1000 }
        let rate = Double(window.reduce(0) { $0 + $1.count }) / 10.0
        return ValueJSON.encode(.dictionary([
            "connections": .integer(Int64(sessions.count)),
            "subscribers": .integer(Int64(hub.subscriptionCount)),
            "seq": .integer(hub.lastBroadcastSeq),
            "changes_per_second": .real(rate),
            "uptime_seconds": .integer(Int64((now - startedAt) / 1000)),
            "store_bytes": .integer(storeBytes),
            "collections": .integer(Int64(directory.collections.count)),
            "commits": .integer(Int64(committer.batches)),
            "queued_writes": .integer(Int64(committer.queuedCount)),
        ]))
    }
}
