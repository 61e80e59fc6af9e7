import SyncCore

/// The order file's bookkeeping for the sync engine: which collections' order files are due to
/// be rewritten, what each file held when last written or read here (what a person's edit
/// started from), MOVEs awaiting an answer, edits that wait for a row's write, and rewrites
/// waiting for a retry. The engine tells it what happened; it decides nothing about files.
final class OrderKeeper {
    /// Collections whose order file is due to be rewritten.
    private var dirty: Set<String> = []
    /// Collections whose order file holds an edit that moves a row whose own write is still in
    /// flight: read again when that write is answered.
    private var editsWaiting: Set<String> = []
    private var bases: [String: OrderBase] = [:]
    /// MOVEs sent and not yet answered, per collection.
    private var movesInFlight: [String: Int] = [:]
    /// Collections whose order file waits for a retry (a full disk).
    private var retries: Set<String> = []
    private var flushScheduled = false

    // MARK: Rewrites

    func markDirty(_ collection: String) {
        dirty.insert(collection)
    }

    /// Takes the collections due for a rewrite, leaving none due.
    func takeDirty() -> Set<String> {
        defer { dirty.removeAll() }
        return dirty
    }

    var hasDirty: Bool { !dirty.isEmpty }

    /// Whether a flush should be scheduled now (rewrites are due and none is scheduled); the
    /// caller schedules it and calls `flushStarted` when it runs.
    func claimFlush() -> Bool {
        guard !dirty.isEmpty, !flushScheduled else { return false }
        flushScheduled = true
        return true
    }

    func flushStarted() {
        flushScheduled = false
    }

    /// A rewrite failed (a full disk): true when no retry is waiting yet (the caller schedules
    /// one, then calls `retryDue`).
    func claimRetry(_ collection: String) -> Bool {
        retries.insert(collection).inserted
    }

    func retryDue(_ collection: String) {
        retries.remove(collection)
        dirty.insert(collection)
    }

    // MARK: What the file was

    func base(_ collection: String) -> OrderBase? {
        bases[collection]
    }

    func setBase(_ collection: String, _ base: OrderBase) {
        bases[collection] = base
    }

    /// The file was found missing: what it held is no longer known (its ids still are).
    func forgetBaseHash(_ collection: String) {
        bases[collection]?.hash = nil
    }

    /// The collection is downloaded afresh (its folder came back).
    func forget(_ collection: String) {
        bases[collection] = nil
    }

    // MARK: Edits and moves

    /// An edit moves a row whose write is unanswered: it is read again when a write is answered.
    func editWaits(_ collection: String) {
        editsWaiting.insert(collection)
    }

    func editRead(_ collection: String) {
        editsWaiting.remove(collection)
    }

    /// A record's write was answered: an edit that waited for it is read with the next rewrite.
    func writeAnswered(_ collection: String) {
        if editsWaiting.contains(collection) { dirty.insert(collection) }
    }

    func moveSent(_ collection: String) {
        movesInFlight[collection, default: 0] += 1
    }

    func moveAnswered(_ collection: String) {
        movesInFlight[collection, default: 1] -= 1
        dirty.insert(collection)
    }

    func hasMovesInFlight(_ collection: String) -> Bool {
        (movesInFlight[collection] ?? 0) != 0
    }

    /// The connection is gone: unanswered MOVEs get no reply now (the replay after the
    /// reconnect shows their effect), and edits that waited are read again.
    func connectionLost() {
        dirty.formUnion(movesInFlight.keys)
        dirty.formUnion(editsWaiting)
        movesInFlight.removeAll()
    }
}

/// The order file as the agent last wrote or read it: what a user's edit started from.
struct OrderBase {
    /// Hash of the file's bytes; nil when only the ids are known (the order at start).
    var hash: String?
    var ids: [RecordID]
}
