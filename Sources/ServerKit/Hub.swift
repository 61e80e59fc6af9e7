import SyncCore

/// Fans committed changes out to the sessions subscribed to each collection.
///
/// Fed by the stream of committed changes (not by the write path), so the same hub serves
/// changes committed by other nodes once the store is shared. Each change line is encoded once
/// and the same bytes go to every subscriber.
final class Hub {
    private var subscribers: [String: [ObjectIdentifier: Session]] = [:]
    private(set) var lastBroadcastSeq: Int64

    /// `lastSeq`: the store's seq at start, so STATS is right before the first change.
    init(lastSeq: Int64) {
        lastBroadcastSeq = lastSeq
    }

    var subscriptionCount: Int { subscribers.values.reduce(0) { $0 + $1.count } }

    func subscribe(_ session: Session, to collection: String) {
        subscribers[collection, default: [:]][ObjectIdentifier(session)] = session
    }

    func unsubscribe(_ session: Session, from collection: String) {
        subscribers[collection]?[ObjectIdentifier(session)] = nil
        if subscribers[collection]?.isEmpty == true { subscribers[collection] = nil }
    }

    func broadcast(_ changes: [Change]) {
        for change in changes {
            lastBroadcastSeq = max(lastBroadcastSeq, change.seq)
            guard let sessions = subscribers[change.collection] else { continue }
            let line = Array(change.line.utf8)
            for session in sessions.values {
                session.deliver(line, seq: change.seq, collection: change.collection)
            }
        }
    }
}
