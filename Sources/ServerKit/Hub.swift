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

    /// The subscribers of `from` follow its new name.
    func rename(_ from: String, to: String) {
        guard let sessions = subscribers.removeValue(forKey: from) else { return }
        subscribers[to, default: [:]].merge(sessions) { first, _ in first }
    }

    func unsubscribe(_ session: Session, from collection: String) {
        subscribers[collection]?[ObjectIdentifier(session)] = nil
        if subscribers[collection]?.isEmpty == true { subscribers[collection] = nil }
    }

    /// Sends a committed batch: each run of consecutive changes to one collection is encoded
    /// once into one buffer, and each subscriber gets that buffer (or the part it has not seen)
    /// in one write, so seq order holds across collections too.
    func broadcast(_ changes: [Change]) {
        var run = ChangeLines()
        var runCollection: String?
        var runSessions: [ObjectIdentifier: Session]?
        func sendRun() {
            guard let collection = runCollection, let sessions = runSessions else { return }
            for session in sessions.values { session.deliver(run, collection: collection) }
        }
        for change in changes {
            lastBroadcastSeq = max(lastBroadcastSeq, change.seq)
            if change.collection != runCollection {
                sendRun()
                runCollection = change.collection
                runSessions = subscribers[change.collection]
                run = ChangeLines()
            }
            if runSessions != nil { run.append(change) }
        }
        sendRun()
    }
}

/// The CHANGE lines of one collection from one committed batch, in seq order, as one buffer.
struct ChangeLines {
    private(set) var bytes: [UInt8] = []
    private var seqs: [Int64] = []
    private var ends: [Int] = []

    var lastSeq: Int64 { seqs.last ?? 0 }

    mutating func append(_ change: Change) {
        bytes.append(contentsOf: change.line.utf8)
        seqs.append(change.seq)
        ends.append(bytes.count)
    }

    /// The lines of the changes after `seq` (all of them in the common case), cut after the
    /// last whole line that fits in `budget` bytes; `complete` says whether nothing was cut.
    func lines(after seq: Int64, within budget: Int) -> (bytes: ArraySlice<UInt8>, complete: Bool) {
        guard let firstNew = seqs.firstIndex(where: { $0 > seq }) else { return ([], true) }
        let start = firstNew == 0 ? 0 : ends[firstNew - 1]
        if bytes.count - start <= budget { return (bytes[start...], true) }
        let fitting = ends[firstNew...].last { $0 - start <= budget } ?? start
        return (bytes[start..<fitting], false)
    }
}
