import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// What a session sends: replies in request order, broadcasts to a subscriber, notices of
/// collections changing, and the goodbye that ends it.
extension Session {
    func send(_ output: ServerOutput) {
        emit(.connection(.send(output)))
    }

    func finishAsync(_ reply: ServerOutput) {
        guard closeReason == nil else { return }
        wait.finished()
        send(reply)
        processInbox()
    }

    func fillSlot(_ index: Int, with reply: ServerOutput) {
        guard closeReason == nil else { return }
        replies.fill(index, with: reply)
        var sent = false
        while let ready = replies.takeReady() {
            send(ready)
            sent = true
        }
        if sent || replies.isEmpty { processInbox() }
    }

    /// Sends the batch's change lines this subscriber does not have yet, in one write; a
    /// subscriber whose unsent output would pass the limit gets the whole lines that fit and
    /// `* BYE SLOW`, rather than being buffered without bound.
    func deliver(_ run: ChangeRun, collection: String) {
        guard closeReason == nil, let through = subscriptions.advance(collection, to: run.lastSeq) else { return }
        let budget = context.configuration.limits.maxPendingOutputBytes - transport.pendingOutputBytes
        let (delivery, complete) = run.delivery(after: through, within: budget)
        if !delivery.bytes.isEmpty { emit(.connection(.deliver(delivery))) }
        if !complete { sayGoodbye(.slow) }
    }

    /// Sends a live `* COLLECTION` line if this connection asked for COLLECTIONS, and ends a
    /// subscription the user may no longer read (`* UNSUB <collection> REVOKED`).
    func collectionChanged(_ name: String, role: Role?, seq: Int64) {
        guard closeReason == nil, user != nil else { return }
        if watchesCollections { send(.notices([.collection(name: name, role: role, seq: seq)])) }
        if role == nil, !isAdmin {
            endSubscription(name)
            endSubscription(Names.conflictsCollection(of: name))
        }
    }

    /// The collection is gone: `* DROPPED <name>` for a member (or a server admin) and its
    /// subscriptions end.
    func collectionDropped(_ name: String, wasMember: Bool) {
        guard closeReason == nil, user != nil else { return }
        let subscribed = dropSubscription(name)
        let companionSubscribed = dropSubscription(Names.conflictsCollection(of: name))
        let wasSubscribed = subscribed || companionSubscribed
        if wasMember || isAdmin || wasSubscribed { send(.notices([.dropped(name)])) }
    }

    /// The collection has a new name: `* RENAMED <old> <new>` for a member (or a server admin);
    /// its subscriptions carry on under the new name, at the same seq.
    func collectionRenamed(_ from: String, to: String, isMember: Bool) {
        guard closeReason == nil, user != nil else { return }
        var subscribed = false
        for (old, new) in [(from, to), (Names.conflictsCollection(of: from), Names.conflictsCollection(of: to))] {
            if subscriptions.rename(old, to: new) { subscribed = true }
        }
        if isMember || isAdmin || subscribed { send(.notices([.renamed(from: from, to: to)])) }
    }

    /// Ends this session's subscription to `collection` if it may no longer read it.
    func recheckAccess() {
        guard let user, closeReason == nil else { return }
        for collection in subscriptions.names where context.directory.role(of: user, isAdmin: isAdmin, in: collection) == nil {
            endSubscription(collection)
        }
    }

    func endSubscription(_ collection: String) {
        if dropSubscription(collection) { send(.notices([.unsubscribedRevoked(collection)])) }
    }

    /// Stops sending `collection`'s changes; whether it was subscribed.
    @discardableResult
    func dropSubscription(_ collection: String) -> Bool {
        guard subscriptions.end(collection) else { return false }
        emit(.unsubscribe(collection))
        return true
    }

    /// The account or token this session logged in with is gone: say so and close.
    func revoke() {
        sayGoodbye(.revoked)
    }

    /// Writes `* BYE <reason>` and closes at once, sent or not: the server's memory budget is
    /// short, and what this connection holds is what it needs back.
    func shed(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        sayGoodbye(reason)
        emit(.connection(.closeNow))
    }

    /// Writes `* BYE <reason>` and closes once it is sent.
    func sayGoodbye(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        if let bye = reason.bye { send(.notices([.bye(bye)])) }
        close(reason)
    }

    /// Ends the session with exactly one reason, logged once.
    public func close(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        ServerLog.event("disconnect", ["address": address, "user": user ?? "-", "reason": reason.rawValue])
        for collection in subscriptions.endAll() { emit(.unsubscribe(collection)) }
        wait.cancel()
        context.sessionClosing(self)
        emit(.connection(.close(reason)))
    }
}
