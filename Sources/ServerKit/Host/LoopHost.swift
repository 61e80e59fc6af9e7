import EventLoop
import Foundation

/// The server's clock and blocking work on a libuv loop: timers, the loop's turns, the thread
/// pool for commits and a thread of its own for each other lane.
final class LoopHost: ServerClock, ServerWork {
    let loop: EventLoop

    init(loop: EventLoop) {
        self.loop = loop
    }

    var milliseconds: UInt64 { loop.nowMilliseconds }
    var wallClockSeconds: Int64 { Int64(Date().timeIntervalSince1970) }

    func after(_ delay: UInt64, _ body: @escaping () -> Void) -> any ScheduledCall {
        LoopCall(LoopTimer.once(on: loop, after: delay, body))
    }

    func atEndOfTurn(_ body: @escaping () -> Void) {
        loop.atEndOfTurn(body)
    }

    func flushOutputNow() {
        loop.flushOutputNow()
    }

    func lane(for purpose: WorkPurpose) -> any WorkLane {
        switch purpose {
        // One transaction is out at a time (the committer waits for it), so the pool serves.
        case .commits: PoolLane(loop: loop)
        case .storeReads, .passwordChecks, .passwordHashes: WorkerThread(loop: loop)
        }
    }
}

/// A libuv timer as a call that can be cancelled (closing it lets the loop end).
private final class LoopCall: ScheduledCall {
    private let timer: LoopTimer

    init(_ timer: LoopTimer) {
        self.timer = timer
    }

    func cancel() {
        timer.close()
    }
}

/// Jobs on libuv's thread pool.
private final class PoolLane: WorkLane {
    private let loop: EventLoop
    private var closed = false

    init(loop: EventLoop) {
        self.loop = loop
    }

    func submit<Result: Sendable>(_ work: @escaping @Sendable () -> Result, then completion: @escaping (Result) -> Void) {
        loop.runBlocking(work) { [self] result in
            guard !closed else { return }
            completion(result)
        }
    }

    func close() {
        closed = true
    }
}

extension WorkerThread: WorkLane {}
