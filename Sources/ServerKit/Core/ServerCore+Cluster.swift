import SyncCore
import SyncProtocol

/// The other nodes of a shared store, heard through its cluster channel: their commits and
/// collection events, ordered with this node's into one feed.
extension ServerCore {
    /// Hands this node's committed changes to the feed, and whatever is next in line out.
    func sequence(_ changes: [Change]) {
        release(feed?.add(changes))
        fillFeedGaps()
    }

    /// Broadcasts the changes the feed let out; whether there were any.
    @discardableResult
    func release(_ ready: [Change]?) -> Bool {
        guard let ready, !ready.isEmpty else { return false }
        broadcast(ready)
        return true
    }

    /// Reads from the change log (off the loop) what other nodes committed before the changes
    /// held back, and broadcasts everything now in order; one read at a time, the next as soon
    /// as one lands.
    func fillFeedGaps() {
        guard store.cluster != nil, let missing = feed?.missing, clusterReads.claimChangeLogRead() else { return }
        reads.read({ store throws(StoreFailure) -> [Change]? in
            // nil (the log no longer has them) must stay nil: the feed skips past them then.
            guard let cluster = store.cluster else { return [] }
            return try cluster.loggedChanges(missing)
        }, then: { [unowned self] result in
            clusterReads.changeLogRead()
            switch result {
            case .failure(let failure):
                // The next event or the housekeeping tick tries again.
                if case .failed(let error) = failure {
                    ServerLog.error("reading changes \(missing.lowerBound)…\(missing.upperBound) from the change log: \(error)")
                }
            case .success(nil):
                // Pruned from the log (this node was cut off too long): subscribers may have
                // missed changes, so they are sent away to resume with SUB … SINCE.
                ServerLog.error("changes \(missing.lowerBound)…\(missing.upperBound) are no longer in the change log; subscribers resume from the store")
                for session in sessions.values where session.isSubscribed { session.sayGoodbye(.slow) }
                release(feed?.skip(through: missing.upperBound))
                fillFeedGaps()
            case .success(let fetched?):
                // Not visible yet: the next event or the housekeeping tick tries again.
                if release(feed?.add(fetched)) { fillFeedGaps() }
            }
        })
    }

    func clusterEvent(_ event: ClusterEvent) {
        apply(event.kind)
    }

    /// What a change to collections, grants or tokens (this node's, or another's) means for
    /// the connections of this node.
    func apply(_ event: ClusterEvent.Kind) {
        switch event {
        case .committed(let seq):
            feed?.committed(through: seq)
            fillFeedGaps()
        case .created(let name, let owner): collectionCreated(name, owner: owner)
        case .dropped(let name): collectionDropped(name)
        case .renamed(let from, let to): collectionRenamed(from, to: to)
        case .granted(let collection, let user, let role): granted(role, to: user, in: collection)
        case .tokenRevoked(let hash): tokenRevoked(hash)
        case .accountsChanged: checkAccounts()
        }
    }

    /// The channel to the other nodes was lost and is back: what it would have said is read
    /// from the store instead.
    func resync() {
        ServerLog.info("cluster channel connected: re-reading collections, accounts and the change log")
        checkAccounts(force: true)
        catchUpWithStore()
    }

    /// Learns the store's latest seq and delivers what this node has not seen.
    func catchUpWithStore() {
        guard feed != nil, clusterReads.claimCurrentSeqRead() else { return }
        reads.read({ store throws(StoreFailure) in try store.currentSeq() }, then: { [unowned self] result in
            clusterReads.currentSeqRead()
            guard case .success(let seq) = result else { return }
            feed?.committed(through: seq)
            fillFeedGaps()
        })
    }

    func collectionCreated(_ name: String, owner: String) {
        directory.created(name, owner: owner)
        membershipBaseline.note(name, directory.collections[name])
        for session in sessions.values where session.user == owner {
            session.collectionChanged(name, role: .admin, seq: 0)
        }
    }

    func collectionDropped(_ name: String) {
        let members = directory.members(of: name)
        directory.dropped(name)
        membershipBaseline.note(name, nil)
        for session in sessions.values { session.collectionDropped(name, wasMember: session.user.map(members.contains) ?? false) }
        if configuration.maxBytesPerUser > 0 {
            reads.read({ store throws(StoreFailure) in try store.storedBytesByCollection() }, then: { [unowned self] result in
                if case .success(let sizes) = result { directory.loadSizes(sizes) }
            })
        }
    }

    func collectionRenamed(_ from: String, to: String) {
        directory.renamed(from, to: to)
        membershipBaseline.note(from, nil)
        membershipBaseline.note(to, directory.collections[to])
        hub.rename(from, to: to)
        hub.rename(Names.conflictsCollection(of: from), to: Names.conflictsCollection(of: to))
        let members = directory.members(of: to)
        for session in sessions.values { session.collectionRenamed(from, to: to, isMember: session.user.map(members.contains) ?? false) }
    }

    func granted(_ role: Role?, to user: String, in collection: String) {
        directory.granted(role, to: user, in: collection)
        membershipBaseline.note(collection, directory.collections[collection])
        let seq = directory.lastSeq(collection)
        for session in sessions.values where session.user == user {
            session.collectionChanged(collection, role: role, seq: seq)
        }
    }
}
