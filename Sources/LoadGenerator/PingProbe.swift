import EventLoop
import Foundation
import Synchronization
import SyncClient

/// A connection that sends a PING every `intervalMilliseconds` on a thread of its own, from
/// `start` to `stop`, whether or not the last was answered (so a stall delays every PING due
/// during it, as it delays every client): how long the server's loop keeps clients waiting
/// while something else runs.
public final class PingProbe: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let finished = Mutex<LatencySummary?>(nil)
    private let done = DispatchSemaphore(value: 0)
    private let intervalMilliseconds: UInt64

    public init(intervalMilliseconds: UInt64 = 2) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    public func start(against target: BenchTarget) {
        let thread = Thread { [self] in
            let loop = EventLoop()
            var latencies = LatencyHistogram()
            var client: ClientConnection?
            var sent: [UInt64] = []
            var answered = 0
            let pacing = LoopTimer(loop: loop)
            func ping() {
                guard !stopping.load(ordering: .relaxed), let client else { return loop.stop() }
                sent.append(EventLoop.monotonicNanoseconds())
                client.send(.ping, tag: "p")
            }
            target.open(on: loop) { opened in
                client = opened
                guard let opened else { return loop.stop() }
                opened.onReply = { _ in
                    latencies.add(EventLoop.monotonicNanoseconds() - sent[answered])
                    answered += 1
                }
                pacing.start(after: self.intervalMilliseconds, repeatEvery: self.intervalMilliseconds) { ping() }
            }
            loop.run()
            pacing.close()
            client?.close()
            loop.runOnce(wait: false)
            loop.close()
            let summary = latencies.summary
            finished.withLock { $0 = summary }
            done.signal()
        }
        thread.start()
    }

    /// Stops pinging; the round trips measured.
    public func stop() -> LatencySummary? {
        stopping.store(true, ordering: .relaxed)
        done.wait()
        return finished.withLock { $0 }
    }
}
