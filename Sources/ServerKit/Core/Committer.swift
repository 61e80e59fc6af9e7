import SyncCore

/// Group commit: writes that arrive while a commit is in flight wait and go into the next
/// transaction together, so one fsync serves many writers and throughput grows with load.
///
/// Server-thread object; the transaction itself runs on the commits' lane, one at a time.
final class Committer {
    typealias Completion = (Result<StoreOutcome, StoreFailure>) -> Void

    /// Upper bound of one transaction, so a huge backlog still commits in bounded steps.
    static let maxBatch = 4096
    /// Writes queued (not yet in a transaction) beyond which sessions stop handing over more
    /// and stop reading their sockets until a batch commits: back-pressure, not a bigger queue.
    static let maxQueuedOperations = 16_384
    static let maxQueuedBytes = 64 << 20

    private let clock: any ServerClock
    private let lane: any WorkLane
    private let store: ServerStore
    /// How long a transaction may be out before the store counts as stalled.
    private let stallMilliseconds: UInt64
    private var inFlightSince: UInt64 = 0
    private var queue = FIFO<(operation: StoreOperation, completion: Completion)>()
    private(set) var queuedBytes = 0
    private var inFlight = false
    private var batchScheduled = false
    /// The server, told what each batch did (`CommitterNotice`).
    private unowned let outlet: any CommitterOutlet
    private(set) var batches = 0

    init(clock: any ServerClock, lane: any WorkLane, store: ServerStore, stallMilliseconds: UInt64, outlet: any CommitterOutlet) {
        self.clock = clock
        self.lane = lane
        self.store = store
        self.stallMilliseconds = stallMilliseconds
        self.outlet = outlet
    }

    /// Whether the transaction in flight has been out longer than `stallMilliseconds` (the
    /// database stopped answering): writes are then answered `unavailable` instead of queued.
    var isStalled: Bool { inFlight && clock.milliseconds - inFlightSince >= stallMilliseconds }

    static let stalled = StoreFailure(.unavailable, "the store has not finished a commit in time")

    /// While the store is stalled, answers every queued write `unavailable`: none of them was
    /// handed to the store, so nothing of them is written. Called by housekeeping.
    func failQueuedIfStalled() {
        guard isStalled, queuedCount > 0 else { return }
        let waiting = queue.popFirst(queuedCount)
        queuedBytes = 0
        ServerLog.error("the store has not finished a commit in \(stallMilliseconds) ms: \(waiting.count) queued write(s) answered UNAVAILABLE")
        for entry in waiting { entry.completion(.failure(Self.stalled)) }
        outlet.committer(.room)
    }

    var isIdle: Bool { !inFlight && queuedCount == 0 }
    var queuedCount: Int { queue.count }
    /// Whether more record writes may be handed over now.
    var hasRoom: Bool { queuedCount < Self.maxQueuedOperations && queuedBytes < Self.maxQueuedBytes }

    func submit(_ operation: StoreOperation, completion: @escaping Completion) {
        guard !isStalled else { return completion(.failure(Self.stalled)) }
        queue.append((operation, completion))
        queuedBytes += operation.approximateBytes
        // Wait for the end of this turn, so writes that arrived together commit together.
        guard !inFlight, !batchScheduled else { return }
        batchScheduled = true
        clock.atEndOfTurn { [self] in
            batchScheduled = false
            if !inFlight, queuedCount > 0 { startBatch() }
        }
    }

    private func startBatch() {
        let batch = queue.popFirst(Self.maxBatch)
        for entry in batch { queuedBytes -= entry.operation.approximateBytes }
        inFlight = true
        inFlightSince = clock.milliseconds
        let operations = batch.map(\.operation)
        let store = self.store
        lane.submit({ () -> Result<[StoreOutcome], StoreFailure> in
            Result { () throws(StoreFailure) in try store.commit(operations) }
        }, then: { [self] result in
            // inFlight stays set while completions run: they may submit more, which must queue.
            batches += 1
            var changes: [Change] = []
            switch result {
            case .success(let outcomes):
                changes.reserveCapacity(outcomes.count)
                for (entry, outcome) in zip(batch, outcomes) {
                    if case .changed(let change) = outcome { changes.append(change) } else { changes.append(contentsOf: outcome.committedChanges) }
                    entry.completion(.success(outcome))
                }
            case .failure(let error):
                ServerLog.error("commit of \(batch.count) operations failed: \(error)")
                outlet.committer(.failed(error))
                for entry in batch { entry.completion(.failure(error)) }
            }
            // Acknowledge first: writers can send their next writes while the changes are
            // being written to every subscriber.
            clock.flushOutputNow()
            if !changes.isEmpty { outlet.committer(.committed(changes)) }
            inFlight = false
            if queuedCount > 0 { startBatch() }
            if hasRoom { outlet.committer(.room) }
            if isIdle { outlet.committer(.idle) }
        })
    }
}

/// What the committer tells the server.
enum CommitterNotice {
    /// A batch's replies went out; its committed changes, in seq order.
    case committed([Change])
    /// A batch could not be committed: the store's error.
    case failed(StoreFailure)
    /// The queue has room again (sessions that waited may hand over writes).
    case room
    /// Nothing is queued or in flight.
    case idle
}

/// The server around a `Committer`, given to it at init.
protocol CommitterOutlet: AnyObject {
    func committer(_ notice: CommitterNotice)
}
