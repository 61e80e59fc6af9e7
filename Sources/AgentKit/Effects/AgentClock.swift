import EventLoop
import Foundation

/// Time as the agent sees it: the wall clock for stamps, a monotonic clock for intervals, and
/// one-shot timers. `LoopClock` when the agent runs; a simulated clock, advanced by the
/// scheduler, in the simulation tests.
public protocol AgentClock: AnyObject {
    /// The wall-clock time (conflict copy and version stamps, the mass-delete window).
    var now: Date { get }
    /// Milliseconds on a clock that never goes back.
    var milliseconds: UInt64 { get }
    /// Runs `body` once, on the agent's thread, after `delay` milliseconds.
    func after(_ delay: UInt64, _ body: @escaping () -> Void)
}

/// The agent's clock on a libuv loop: one `LoopTimer` a pending call, all closed by `stop()`
/// so the loop can end.
final class LoopClock: AgentClock {
    private let loop: EventLoop
    private var timers: [ObjectIdentifier: LoopTimer] = [:]

    init(loop: EventLoop) {
        self.loop = loop
    }

    var now: Date { Date() }
    var milliseconds: UInt64 { loop.nowMilliseconds }

    func after(_ delay: UInt64, _ body: @escaping () -> Void) {
        let timer = LoopTimer(loop: loop)
        let key = ObjectIdentifier(timer)
        timers[key] = timer
        timer.start(after: delay) { [unowned self] in
            timers.removeValue(forKey: key)?.close()
            body()
        }
    }

    /// Drops every pending call.
    func stop() {
        for timer in timers.values { timer.close() }
        timers.removeAll()
    }
}
