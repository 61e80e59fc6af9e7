import EventLoop
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
        var run: ChangeRun?
        var runSessions: [ObjectIdentifier: Session]?
        func sendRun() {
            guard let run, let sessions = runSessions else { return }
            for session in sessions.values { session.deliver(run, collection: run.collection) }
        }
        for change in changes {
            lastBroadcastSeq = max(lastBroadcastSeq, change.seq)
            if change.collection != run?.collection {
                sendRun()
                runSessions = subscribers[change.collection]
                run = ChangeRun(collection: change.collection)
            }
            if runSessions != nil { run?.append(change) }
        }
        sendRun()
    }
}

/// The CHANGE lines of one collection from one committed batch, in seq order, as one buffer
/// made once for every subscriber, with the changes they were made of (an event stream makes
/// its events from those, once for all streams).
public final class ChangeRun {
    public let collection: String
    private(set) var bytes: [UInt8] = []
    public private(set) var changes: [Change] = []
    private var ends: [Int] = []

    init(collection: String) {
        self.collection = collection
    }

    var lastSeq: Int64 { changes.last?.seq ?? 0 }

    /// The bytes as every socket subscriber is sent them: one buffer, referenced by each
    /// connection's queue instead of copied into it. Made at the first delivery, once the run
    /// is complete.
    private(set) lazy var shared = SharedBytes(bytes)

    func append(_ change: Change) {
        bytes.append(contentsOf: change.line.utf8)
        changes.append(change)
        ends.append(bytes.count)
    }

    /// The changes after `seq` (all of them in the common case), cut after the last whole line
    /// that fits in `budget` bytes; `complete` says whether nothing was cut.
    func delivery(after seq: Int64, within budget: Int) -> (ChangeDelivery, complete: Bool) {
        guard let firstNew = changes.firstIndex(where: { $0.seq > seq }) else { return (ChangeDelivery(run: self, range: 0..<0), true) }
        let start = firstNew == 0 ? 0 : ends[firstNew - 1]
        if bytes.count - start <= budget { return (ChangeDelivery(run: self, range: firstNew..<changes.count), true) }
        let fitting = ends[firstNew...].lastIndex { $0 - start <= budget }.map { $0 + 1 } ?? firstNew
        return (ChangeDelivery(run: self, range: firstNew..<fitting), false)
    }

    /// The bytes of the changes at `range`.
    func bytes(of range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[byteRange(of: range)]
    }

    /// Where the changes at `range` are in `bytes`.
    func byteRange(of range: Range<Int>) -> Range<Int> {
        guard !range.isEmpty else { return 0..<0 }
        return (range.lowerBound == 0 ? 0 : ends[range.lowerBound - 1])..<ends[range.upperBound - 1]
    }
}

/// The part of a `ChangeRun` one subscriber is sent.
public struct ChangeDelivery {
    public let run: ChangeRun
    /// Which of the run's changes.
    public let range: Range<Int>

    public var bytes: ArraySlice<UInt8> { run.bytes(of: range) }
    /// Where `bytes` are in the run's shared buffer.
    var byteRange: Range<Int> { run.byteRange(of: range) }
    public var changes: ArraySlice<Change> { run.changes[range] }
}
