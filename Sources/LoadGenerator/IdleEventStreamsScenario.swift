import EventLoop
import SyncClient
import SyncCore
import SyncProtocol

/// `bench sse --count K`: K event streams open on one collection and idle, for the server's
/// memory per stream; one change then reaches all of them, to show they are alive.
public struct IdleEventStreamsScenario {
    public var count: Int
    public var httpAddress: SocketAddress
    public var collection = "bench_idle_streams"

    public init(count: Int, httpAddress: SocketAddress) {
        self.count = count
        self.httpAddress = httpAddress
    }

    /// How many streams were open when `measure` ran, and how many got the change after it.
    public func run(against target: BenchTarget, measure: () -> Void) throws -> (streams: Int, delivered: Int) {
        let loop = EventLoop()
        let tally = DeliveryTally(expected: count)
        let streams = EventStreamGroup()
        var setupConnection: ClientConnection?
        var ready = false
        var failure: String?
        target.open(on: loop) { setup in
            guard let setup else {
                failure = "cannot log in"
                return loop.stop()
            }
            setupConnection = setup
            setup.send(.create(collection: collection)) { _ in }
            setup.send(.tokenNew(label: "bench")) { line in
                guard case .ok(_, .token(let token), _) = line.reply else {
                    failure = "no token"
                    return loop.stop()
                }
                streams.open(
                    count: count, collection: collection, since: "0", token: token, loop: loop, address: httpAddress, tally: tally,
                    ready: {
                        ready = true
                        loop.stop()
                    },
                    failed: {
                        failure = "a stream was refused or closed (open-file limit?)"
                        loop.stop()
                    }, complete: { loop.stop() })
            }
        }
        loop.run()
        if let failure { throw BenchFailure(failure) }
        guard ready, let setup = setupConnection else { throw BenchFailure("the streams did not open") }
        measure()
        let stamp = EventLoop.monotonicNanoseconds()
        setup.send(.put(collection: collection, id: "ping", baseRev: 0, fieldsJSON: "{\"t\":\(stamp)}"), tag: "w")
        let deadline = LoopTimer(loop: loop)
        deadline.start(after: 30_000) { loop.stop() }
        loop.run()
        deadline.close()
        streams.close()
        setup.close()
        loop.runOnce(wait: false)
        loop.close()
        return (count, tally.delivered)
    }
}
