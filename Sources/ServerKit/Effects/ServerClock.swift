/// Time as the server's core sees it: a monotonic clock for deadlines, the wall clock for
/// stamps, one-shot calls, and the loop's turns (work saved for the end of the turn, output
/// handed over early). `LoopHost` when serving; the test kit's simulated server runs it on
/// virtual time.
public protocol ServerClock: AnyObject {
    /// Milliseconds on a clock that never goes back.
    var milliseconds: UInt64 { get }
    /// Seconds since 1970 on the wall clock (tokens, invitations, tombstones, HTTP dates).
    var wallClockSeconds: Int64 { get }
    /// Runs `body` once, on the server's thread, after `delay` milliseconds, unless cancelled.
    func after(_ delay: UInt64, _ body: @escaping () -> Void) -> any ScheduledCall
    /// Runs `body` once this turn's events are handled (writes that arrived together commit
    /// together).
    func atEndOfTurn(_ body: @escaping () -> Void)
    /// Hands the output queued so far to the connections now, not at the end of the turn.
    func flushOutputNow()
}

/// A call a `ServerClock` will make; `cancel()` before then and it is not made.
public protocol ScheduledCall: AnyObject {
    func cancel()
}

extension ServerClock {
    /// Runs `body` every `period` milliseconds until the returned call is cancelled.
    public func every(_ period: UInt64, _ body: @escaping () -> Void) -> any ScheduledCall {
        RepeatingCall(clock: self, period: period, body: body)
    }
}

/// A call made every period: each one schedules the next until cancelled.
private final class RepeatingCall: ScheduledCall {
    private unowned let clock: any ServerClock
    private let period: UInt64
    private let body: () -> Void
    private var next: (any ScheduledCall)?

    init(clock: any ServerClock, period: UInt64, body: @escaping () -> Void) {
        self.clock = clock
        self.period = period
        self.body = body
        arm()
    }

    private func arm() {
        // Weak: an owner that lets go without cancelling (a front whose listener failed to
        // bind) leaves one call pending, which then finds nothing to run.
        next = clock.after(period) { [weak self] in
            guard let self else { return }
            arm()
            body()
        }
    }

    func cancel() {
        next?.cancel()
        next = nil
    }
}
