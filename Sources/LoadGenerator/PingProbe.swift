import EventLoop
import Foundation
import Synchronization
import SyncClient

/// A connection that keeps one PING in flight on a thread of its own, from `start` to `stop`:
/// how long the server's loop keeps a client waiting while something else runs.
public final class PingProbe: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let finished = Mutex<LatencySummary?>(nil)
    private let done = DispatchSemaphore(value: 0)

    public init() {}

    public func start(against target: BenchTarget) {
        let thread = Thread { [self] in
            let loop = EventLoop()
            var latencies = LatencyHistogram()
            var client: ClientConnection?
            func ping() {
                guard !stopping.load(ordering: .relaxed), let client else { return loop.stop() }
                let sent = EventLoop.monotonicNanoseconds()
                client.send(.ping) { _ in
                    latencies.add(EventLoop.monotonicNanoseconds() - sent)
                    ping()
                }
            }
            target.open(on: loop) { opened in
                client = opened
                if opened == nil { return loop.stop() }
                ping()
            }
            loop.run()
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
