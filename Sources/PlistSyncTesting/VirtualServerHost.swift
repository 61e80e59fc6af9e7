import ServerKit

/// A `ServerCore`'s clock and blocking work on the scheduler's virtual time: each event the
/// server handles is one turn (the event, then the work saved for the end of the turn and the
/// answers of blocking work that took no time, until none is left, then `afterTurn`). Work
/// runs on the server's thread, when its lane reaches it; commits and store reads take as long
/// as `faults` say (a stall holds them and everything behind them).
///
/// One host a server process: a crashed server's host is `kill`ed and its timers and answers
/// die with it.
public final class VirtualServerHost: ServerClock, ServerWork {
    private let scheduler: Scheduler
    private let faults: StoreFaults
    private var endOfTurn: [() -> Void] = []
    /// Answers of work that took no time, for this turn.
    private var answers: [() -> Void] = []
    private var isTurning = false
    public private(set) var isAlive = true
    /// Called at the end of every turn (the test hands clients what the server wrote).
    public var afterTurn: () -> Void = {}

    /// The wall clock at virtual time 0, in seconds since 1970.
    private let epochSeconds: Int64

    public init(scheduler: Scheduler, faults: StoreFaults, epochSeconds: Int64) {
        self.scheduler = scheduler
        self.faults = faults
        self.epochSeconds = epochSeconds
    }

    /// The process is gone: nothing it scheduled happens.
    public func kill() {
        isAlive = false
        endOfTurn.removeAll()
        answers.removeAll()
    }

    /// Runs `body` as one turn of the server (a request arriving, a timer firing).
    public func turn(_ body: () -> Void) {
        guard isAlive else { return }
        guard !isTurning else { return body() }
        isTurning = true
        body()
        while isAlive, !(endOfTurn.isEmpty && answers.isEmpty) {
            while !endOfTurn.isEmpty { endOfTurn.removeFirst()() }
            let ready = answers
            answers.removeAll()
            for answer in ready { answer() }
        }
        isTurning = false
        if isAlive { afterTurn() }
    }

    public var milliseconds: UInt64 { scheduler.now }
    public var wallClockSeconds: Int64 { epochSeconds + Int64(scheduler.now / 1000) }

    public func after(_ delay: UInt64, _ body: @escaping () -> Void) -> any ScheduledCall {
        let call = VirtualCall()
        scheduler.after(delay) { [weak self] in
            guard let self, !call.isCancelled else { return }
            turn(body)
        }
        return call
    }

    public func atEndOfTurn(_ body: @escaping () -> Void) {
        endOfTurn.append(body)
    }

    /// Everything written is the client's at the end of the turn already.
    public func flushOutputNow() {}

    public func lane(for purpose: WorkPurpose) -> any WorkLane {
        VirtualLane(host: self, purpose: purpose)
    }

    /// Runs `job` after `delay` (now: within this turn).
    fileprivate func answer(after delay: UInt64, _ job: @escaping () -> Void) {
        if delay == 0, isTurning { return answers.append(job) }
        scheduler.after(delay) { [weak self] in self?.turn(job) }
    }

    fileprivate func delay(for purpose: WorkPurpose) -> UInt64 {
        switch purpose {
        case .commits, .storeReads: faults.delay(at: scheduler.now)
        case .passwordChecks, .passwordHashes: 0
        }
    }
}

/// A call the virtual host will make unless cancelled.
private final class VirtualCall: ScheduledCall {
    var isCancelled = false
    func cancel() { isCancelled = true }
}

/// Jobs one at a time, in order: each runs when it reaches the front and its delay is over.
private final class VirtualLane: WorkLane {
    private unowned let host: VirtualServerHost
    private let purpose: WorkPurpose
    private var jobs: [() -> Void] = []
    private var busy = false
    private var closed = false

    init(host: VirtualServerHost, purpose: WorkPurpose) {
        self.host = host
        self.purpose = purpose
    }

    func submit<Result: Sendable>(_ work: @escaping @Sendable () -> Result, then completion: @escaping (Result) -> Void) {
        guard !closed else { return }
        jobs.append { completion(work()) }
        startNext()
    }

    private func startNext() {
        guard !busy, !closed, !jobs.isEmpty else { return }
        busy = true
        let job = jobs.removeFirst()
        host.answer(after: host.delay(for: purpose)) { [self] in
            busy = false
            guard !closed else { return }
            job()
            startNext()
        }
    }

    func close() {
        closed = true
        jobs.removeAll()
    }
}
