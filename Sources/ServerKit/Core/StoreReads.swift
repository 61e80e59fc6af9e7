import SyncCore
import SyncProtocol

/// Every store read a running server makes (a session's GET, LIST, SUB replay and token list,
/// login lookups, account re-reads, the cluster's change log), run one at a time on a thread of
/// their own and answered on the server's thread, so a database that stalls never stalls it:
/// PINGs, commits already made and every other connection go on.
///
/// A read that has no answer within `deadlineMilliseconds` is answered `.unavailable` (its late
/// result is dropped); while the oldest read is past its deadline the store counts as stalled
/// and new reads are answered `.unavailable` at once instead of queueing behind it. At most
/// `maxWaiting` reads wait.
///
/// Server-thread object.
final class StoreReads {
    /// Why a read has no answer.
    enum Failure: Error {
        /// The store did not answer in time, or is stalled, or too many reads wait.
        case unavailable
        /// The store answered with an error.
        case failed(StoreFailure)
    }

    static let maxWaiting = 4_096
    /// How often overdue reads are looked for while any wait.
    static let sweepMilliseconds: UInt64 = 100

    let deadlineMilliseconds: UInt64
    private let clock: any ServerClock
    private let store: ServerStore
    private let worker: any WorkLane
    /// Reads handed to the thread and not yet returned by it, oldest first (answered or not).
    private var waiting = FIFO<Ticket>()
    /// Looks for overdue reads while any wait.
    private var sweeper: (any ScheduledCall)?

    /// One read's answer, given once: by the thread's result or by the deadline.
    private final class Ticket {
        let deadline: UInt64
        var answer: ((Result<Any, Failure>) -> Void)?

        init(deadline: UInt64, answer: @escaping (Result<Any, Failure>) -> Void) {
            self.deadline = deadline
            self.answer = answer
        }

        func give(_ result: Result<Any, Failure>) {
            guard let answer else { return }
            self.answer = nil
            answer(result)
        }
    }

    init(clock: any ServerClock, lane: any WorkLane, store: ServerStore, deadlineMilliseconds: UInt64) {
        self.clock = clock
        self.store = store
        self.deadlineMilliseconds = deadlineMilliseconds
        worker = lane
    }

    /// Whether the oldest read has been waiting past its deadline.
    var isStalled: Bool {
        guard let oldest = waiting.first else { return false }
        return clock.milliseconds >= oldest.deadline
    }

    /// Runs `body` against the store off the server's thread; `completion` gets its result on
    /// it, exactly once (not at all after `close()`).
    func read<T: Sendable>(
        _ body: @escaping @Sendable (ServerStore) throws(StoreFailure) -> T,
        then completion: @escaping (Result<T, Failure>) -> Void
    ) {
        guard waiting.count < Self.maxWaiting, !isStalled else { return completion(.failure(.unavailable)) }
        let ticket = Ticket(deadline: clock.milliseconds + deadlineMilliseconds) { result in
            completion(result.map { $0 as! T })
        }
        waiting.append(ticket)
        startSweeping()
        let store = self.store
        worker.submit({ () -> Result<T, StoreFailure> in
            Result { () throws(StoreFailure) in try body(store) }
        }, then: { [self] (result: Result<T, StoreFailure>) in
            // The thread answers in order: this is the oldest read.
            _ = waiting.popFirst()
            if waiting.isEmpty { stopSweeping() }
            ticket.give(result.map { $0 as Any }.mapError { Failure.failed($0) })
        })
    }

    /// Runs a query a session asked for.
    func answer(_ query: StoreQuery, then completion: @escaping (Result<StoreAnswer, Failure>) -> Void) {
        read({ store throws(StoreFailure) in try query.run(on: store) }, then: completion)
    }

    private func startSweeping() {
        guard sweeper == nil else { return }
        sweeper = clock.every(Self.sweepMilliseconds) { [unowned self] in sweep() }
    }

    private func stopSweeping() {
        sweeper?.cancel()
        sweeper = nil
    }

    /// Answers `.unavailable` to every read past its deadline (they are in deadline order).
    private func sweep() {
        let now = clock.milliseconds
        var overdue: [Ticket] = []
        waiting.forEach { ticket in
            if now >= ticket.deadline, ticket.answer != nil { overdue.append(ticket) }
        }
        guard !overdue.isEmpty else { return }
        ServerLog.error("the store has not answered \(overdue.count) read(s) within \(deadlineMilliseconds) ms: answering UNAVAILABLE")
        for ticket in overdue { ticket.give(.failure(.unavailable)) }
    }

    /// Stops the thread after the read in progress; answers still due are dropped.
    func close() {
        stopSweeping()
        worker.close()
        while let ticket = waiting.popFirst() { ticket.answer = nil }
    }
}

/// A read a session asks the store for, as data (`SessionAction.read`); answered by a
/// `StoreAnswer` of the same case.
enum StoreQuery: Sendable, Equatable {
    case record(collection: String, id: String)
    /// Opens a listing of the collection, read a page at a time by `listingPage`.
    case openListing(collection: String)
    case listingPage(ListingHandle, limit: Int)
    /// The same page as lines (a line connection's).
    case listingLines(ListingHandle, limit: Int, collection: String)
    case page(collection: String, after: RecordCursor?, limit: Int)
    case versions(collection: String, id: String, limit: Int)
    /// The collection's live records as they stood at `seq`, as a listing.
    case listingAt(collection: String, seq: Int64)
    /// A page of that list: at most `limit` records after `after`.
    case pageAt(collection: String, seq: Int64, after: RecordCursor?, limit: Int)
    case log(collection: String, LogQuery)
    /// What REVERT would write: the changes after `seq` and the states before them.
    case revertPlan(collection: String, seq: Int64, author: LogQuery.Author?)
    case changes(collection: String, since: Int64, limit: Int)
    case changeLines(collection: String, since: Int64, limit: Int)
    case tokens(of: String?)
    case users
    case invitations(of: String)

    func run(on store: ServerStore) throws(StoreFailure) -> StoreAnswer {
        switch self {
        case .record(let collection, let id): .record(try store.record(collection, id))
        case .openListing(let collection): .listing(ListingHandle(try store.listing(collection)))
        case .listingPage(let handle, let limit): .list((try handle.listing.next(limit), handle.listing.seq))
        case .listingLines(let handle, let limit, let collection): .lines(try handle.listing.nextLines(limit, collection: collection), seq: handle.listing.seq)
        case .changeLines(let collection, let since, let limit): .changeLines(try store.changeLines(collection, since: since, limit: limit))
        case .page(let collection, let after, let limit): .list(try store.page(collection, after: after, limit: limit))
        case .versions(let collection, let id, let limit): .versions(try store.versions(collection, id, limit: limit))
        case .listingAt(let collection, let seq):
            .pastListing(try store.list(collection, at: seq).map { ListingHandle(WholeListing(records: $0, seq: seq)) })
        case .pageAt(let collection, let seq, let after, let limit):
            .pastPage(try store.list(collection, at: seq).map { Self.page(of: $0, after: after, limit: limit) })
        case .log(let collection, let query): .log(try store.log(collection, query))
        case .revertPlan(let collection, let seq, let author): .revertPlan(try Self.plan(collection, seq, author, on: store))
        case .changes(let collection, let since, let limit): .changes(try store.changes(collection, since: since, limit: limit))
        case .tokens(let user): .tokens(try store.tokens(of: user))
        case .users: .users(try store.users())
        case .invitations(let collection): .invitations(try store.invitations(of: collection))
        }
    }
}

extension StoreQuery {
    /// The records of `list` (in list order) after `cursor`, at most `limit`.
    static func page(of list: [RecordState], after cursor: RecordCursor?, limit: Int) -> [RecordState] {
        // A scan: the page already cost the list's rebuild.
        let start = cursor.map { cursor in list.firstIndex { RecordCursor($0).map(cursor.precedes) ?? false } ?? list.count } ?? 0
        return Array(list[start...].prefix(limit))
    }

    /// Reads every change after `seq` and the states the records it touches had at `seq`.
    private static func plan(_ collection: String, _ seq: Int64, _ author: LogQuery.Author?, on store: ServerStore) throws(StoreFailure) -> RevertPlanAnswer {
        let changes = try store.log(collection, LogQuery(since: seq, author: nil, limit: RevertPlan.maxChanges + 1))
        guard changes.count <= RevertPlan.maxChanges else { return .tooLarge }
        var ids: [String] = []
        var seen = Set<RecordID>()
        for change in changes where seen.insert(RecordID(change.state.id)).inserted { ids.append(change.state.id) }
        guard let states = try store.states(collection, ids, at: seq) else { return .expired }
        return .plan(RevertPlan(changes: changes, statesAt: states, author: author))
    }
}

/// What planning a REVERT came to.
enum RevertPlanAnswer: Sendable {
    case plan(RevertPlan)
    /// The log no longer reaches back to the seq.
    case expired
    /// More than `RevertPlan.maxChanges` changes since the seq.
    case tooLarge
}

/// The store's answer to a `StoreQuery`.
enum StoreAnswer: Sendable {
    case record(RecordState?)
    case list((records: [RecordState], seq: Int64))
    case listing(ListingHandle)
    /// nil: changes after the asked seq are no longer kept.
    case changes((changes: [Change], seq: Int64)?)
    case lines(EncodedLines, seq: Int64)
    /// nil: changes after the asked seq are no longer kept.
    case changeLines((lines: EncodedLines, seq: Int64)?)
    case tokens([TokenInfo])
    case users([StoredUser])
    case invitations([Invitation])
    case versions([RecordVersion])
    /// nil: the log no longer reaches back that far.
    case pastListing(ListingHandle?)
    /// nil: the log no longer reaches the seq.
    case pastPage([RecordState]?)
    case log([LoggedChange])
    case revertPlan(RevertPlanAnswer)
}

/// A store's listing in progress, held by the session between its pages (compared by identity).
struct ListingHandle: Sendable, Equatable {
    let listing: any RecordListing

    init(_ listing: any RecordListing) {
        self.listing = listing
    }

    static func == (a: ListingHandle, b: ListingHandle) -> Bool { a.listing === b.listing }
}
