import SyncCore

/// Committed changes reaching the directory (sizes, collection seqs), the counters and every
/// subscriber: this node's own, or, on a shared store, the feed's next in line.
extension ServerCore {
    func broadcast(_ changes: [Change]) {
        counters.countChanges(changes.count, now: clock.milliseconds)
        for change in changes { directory.applyCommitted(change) }
        hub.broadcast(changes)
    }
}
