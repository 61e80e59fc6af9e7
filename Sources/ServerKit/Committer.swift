import EventLoop
import RecordStore
import SQLiteKit
import SyncCore

/// Group commit: writes that arrive while a commit is in flight wait and go into the next
/// transaction together, so one fsync serves many writers and throughput grows with load.
///
/// Loop-thread object; the transaction itself runs on the thread pool, one at a time.
final class Committer {
    typealias Completion = (Result<StoreOutcome, StoreError>) -> Void

    /// Upper bound of one transaction, so a huge backlog still commits in bounded steps.
    static let maxBatch = 4096

    private let loop: EventLoop
    private let writer: RecordWriter
    private var queue: [(operation: StoreOperation, completion: Completion)] = []
    private var inFlight = false
    private var batchScheduled = false
    /// Called after each batch's replies, with the committed changes in seq order.
    var onCommitted: ([Change]) -> Void = { _ in }
    /// Called whenever the committer has nothing queued or in flight.
    var onIdle: () -> Void = {}
    private(set) var batches = 0

    init(loop: EventLoop, writer: RecordWriter) {
        self.loop = loop
        self.writer = writer
    }

    var isIdle: Bool { !inFlight && queue.isEmpty }
    var queuedCount: Int { queue.count }

    func submit(_ operation: StoreOperation, completion: @escaping Completion) {
        queue.append((operation, completion))
        // Wait for the end of this loop turn, so writes that arrived together commit together.
        guard !inFlight, !batchScheduled else { return }
        batchScheduled = true
        loop.atEndOfTurn { [self] in
            batchScheduled = false
            if !inFlight, !queue.isEmpty { startBatch() }
        }
    }

    private func startBatch() {
        let count = min(queue.count, Self.maxBatch)
        let batch = Array(queue[0..<count])
        queue.removeFirst(count)
        inFlight = true
        let operations = batch.map(\.operation)
        let writer = self.writer
        loop.runBlocking({ () -> Result<[StoreOutcome], StoreError> in
            Result { () throws(StoreError) in try writer.commit(operations) }
        }, then: { [self] result in
            // inFlight stays set while completions run: they may submit more, which must queue.
            batches += 1
            var changes: [Change] = []
            switch result {
            case .success(let outcomes):
                for (entry, outcome) in zip(batch, outcomes) {
                    if case .changed(let change) = outcome { changes.append(change) }
                    entry.completion(.success(outcome))
                }
            case .failure(let error):
                ServerLog.error("commit of \(batch.count) operations failed: \(error)")
                for entry in batch { entry.completion(.failure(error)) }
            }
            // Acknowledge first: writers can send their next writes while the changes are
            // being written to every subscriber.
            loop.flushOutputNow()
            if !changes.isEmpty { onCommitted(changes) }
            inFlight = false
            if !queue.isEmpty { startBatch() } else { onIdle() }
        })
    }
}
