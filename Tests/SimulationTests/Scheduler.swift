import Foundation
@testable import AgentKit

/// SplitMix64: one seed gives one sequence of choices, the same on every machine.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `percent`/100.
    mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &self) < percent
    }
}

/// Virtual time and the queue of everything that will happen: timers, message deliveries, file
/// events, app saves, crashes. Events run one at a time in (time, order of scheduling) order,
/// so a run is a pure function of its seed.
final class Scheduler {
    private struct Event {
        var time: UInt64
        var order: UInt64
        var body: () -> Void
    }

    private(set) var now: UInt64 = 0
    private var queue: [Event] = []
    private var scheduled: UInt64 = 0
    private(set) var eventsRun = 0
    var random: SeededRandom

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    /// Runs `body` at `now + delay` milliseconds.
    func after(_ delay: UInt64, _ body: @escaping () -> Void) {
        scheduled += 1
        let event = Event(time: now + delay, order: scheduled, body: body)
        // Binary search for the insertion point keeps the queue sorted.
        var low = 0
        var high = queue.count
        while low < high {
            let middle = (low + high) / 2
            let other = queue[middle]
            if (other.time, other.order) < (event.time, event.order) { low = middle + 1 } else { high = middle }
        }
        queue.insert(event, at: low)
    }

    /// Drops every event still to come (the run is over; their closures hold the machines).
    func clear() {
        queue.removeAll()
    }

    /// Runs events until the queue is empty or the next one is after `time`; then time is `time`.
    func run(until time: UInt64) {
        while let first = queue.first, first.time <= time {
            queue.removeFirst()
            now = first.time
            eventsRun += 1
            first.body()
        }
        now = max(now, time)
    }
}

/// An agent's clock on the scheduler. Each machine gets its own, made anew at every (re)start:
/// the timers of a crashed agent die with it.
final class SimulatedClock: AgentClock {
    private let scheduler: Scheduler
    var isAlive = true
    /// The wall clock at virtual time 0.
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    init(scheduler: Scheduler) {
        self.scheduler = scheduler
    }

    var now: Date { Self.epoch.addingTimeInterval(Double(scheduler.now) / 1000) }
    var milliseconds: UInt64 { scheduler.now }

    func after(_ delay: UInt64, _ body: @escaping () -> Void) {
        scheduler.after(delay) { [weak self] in
            guard self?.isAlive == true else { return }
            body()
        }
    }
}
