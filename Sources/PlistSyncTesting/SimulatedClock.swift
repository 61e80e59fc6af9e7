import AgentKit
import Foundation

/// An agent's clock on the scheduler. Each machine gets its own, made anew at every (re)start:
/// the timers of a crashed agent die with it.
public final class SimulatedClock: AgentClock {
    private let scheduler: Scheduler
    /// Seconds the machine's wall clock is off (a clock jump moves it; the monotonic clock does
    /// not move).
    private let offset: () -> TimeInterval
    public var isAlive = true
    /// The wall clock at virtual time 0.
    public static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    public init(scheduler: Scheduler, offset: @escaping () -> TimeInterval) {
        self.scheduler = scheduler
        self.offset = offset
    }

    public var now: Date { Self.epoch.addingTimeInterval(Double(scheduler.now) / 1000 + offset()) }
    public var milliseconds: UInt64 { scheduler.now }

    public func after(_ delay: UInt64, _ body: @escaping () -> Void) {
        scheduler.after(delay) { [weak self] in
            guard self?.isAlive == true else { return }
            body()
        }
    }
}
