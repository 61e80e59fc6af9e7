import Foundation

/// Virtual time and the queue of everything that will happen: timers, message deliveries, file
/// events, app saves, crashes. Events run one at a time in (time, order of scheduling) order,
/// so a run is a pure function of its seed.
public final class Scheduler {
    private struct Event {
        var time: UInt64
        var order: UInt64
        var body: () -> Void
    }

    public private(set) var now: UInt64 = 0
    private var queue: [Event] = []
    private var scheduled: UInt64 = 0
    public private(set) var eventsRun = 0
    public var random: SeededRandom
    /// Runs after every event (a check of invariants that must hold at every moment).
    public var afterEachEvent: (() -> Void)?

    public init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    /// Runs `body` at `now + delay` milliseconds.
    public func after(_ delay: UInt64, _ body: @escaping () -> Void) {
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
    public func clear() {
        queue.removeAll()
        afterEachEvent = nil
    }

    /// Whether nothing is left to happen.
    public var isIdle: Bool { queue.isEmpty }

    /// Runs events until the queue is empty or the next one is after `time`; then time is `time`.
    public func run(until time: UInt64) {
        while let first = queue.first, first.time <= time { runFirst() }
        now = max(now, time)
    }

    /// Moves time on by `delay` milliseconds by hand, running everything due on the way (as
    /// swift-nio's `EmbeddedEventLoop.advanceTime(by:)` does).
    public func advance(by delay: UInt64) {
        run(until: now + delay)
    }

    /// Runs events, however far ahead, until none is left or `limit` have run (a timer that
    /// re-arms itself never lets the queue empty); whether it emptied.
    @discardableResult
    public func runUntilIdle(limit: Int = 1_000_000) -> Bool {
        var left = limit
        while !queue.isEmpty, left > 0 {
            runFirst()
            left -= 1
        }
        return queue.isEmpty
    }

    /// Runs events one at a time until `condition` holds or nothing is left to happen within
    /// `milliseconds` (then time is at that deadline); whether it held.
    public func run(within milliseconds: UInt64, until condition: () -> Bool) -> Bool {
        let deadline = now + milliseconds
        while !condition() {
            guard let first = queue.first, first.time <= deadline else {
                now = max(now, deadline)
                return false
            }
            runFirst()
        }
        return true
    }

    private func runFirst() {
        let first = queue.removeFirst()
        now = first.time
        eventsRun += 1
        first.body()
        afterEachEvent?()
    }
}
