import EventLoop
import SyncClient
import SyncCore
import SyncProtocol

/// PlistSync subscriber connections of one fan-out run in this process: each logs in,
/// subscribes from a seq, then has its raw bytes counted by a shared `DeliveryTally`.
final class SubscriberGroup {
    private(set) var connections: [ClientConnection] = []
    let tally: DeliveryTally

    init(tally: DeliveryTally) {
        self.tally = tally
    }

    /// Opens `count` subscribers of `collection` from `since`; calls `ready` once all are
    /// subscribed, `failed` when one cannot connect, log in, or is dropped, and `complete`
    /// once the tally has everything it expects.
    func open(
        count: Int, collection: String, since: String, loop: EventLoop, target: BenchTarget,
        ready: @escaping () -> Void, failed: @escaping () -> Void, complete: @escaping () -> Void
    ) {
        var subscribed = 0
        for index in 0..<count {
            target.spread(index).open(on: loop) { [self] client in
                guard let client else { return failed() }
                connections.append(client)
                client.onUntagged = { line in
                    if line.bytes.starts(with: "* BYE".utf8) { failed() }
                }
                // A subscriber the server drops (e.g. * BYE SLOW) fails the run instead of hanging it.
                client.onClosed = { _ in failed() }
                client.send(.subscribe(collection: collection, since: Int64(since) ?? 0)) { [tally] line in
                    guard case .ok = line.reply else { return failed() }
                    // From here on, read raw bytes the way the peer clients do, so the client's
                    // cost per message is the same for every system measured.
                    let read = tally.subscriberReader()
                    client.readRaw { bytes in
                        if read(bytes) { complete() }
                    }
                    subscribed += 1
                    if subscribed == count { ready() }
                }
            }
        }
    }

    func close() {
        for client in connections {
            client.onClosed = { _ in }
            client.close()
        }
    }
}

/// Fan-out subscribers in another process (`plistsync bench fanout-subscribers`), so one client
/// process's CPU does not cap what a server can deliver to 1,000 subscribers.
public protocol SubscriberHelpers {
    /// Starts the helpers' subscribers from `since`; returns once all are subscribed.
    func start(since: String) throws
    /// Waits for every helper's report.
    func reports() throws -> [SubscriberReport]
}

/// The helper side of a multi-process fan-out: `subscribers` connections from `since`,
/// waiting for `messages` changes each.
public struct FanoutSubscribers {
    public var subscribers: Int
    public var messages: Int
    public var since: String
    public var collection = "bench_fanout"

    public init(subscribers: Int, messages: Int, since: String) {
        self.subscribers = subscribers
        self.messages = messages
        self.since = since
    }

    /// Calls `ready` once all are subscribed; nil when one failed or `timeoutSeconds` passed.
    public func run(against target: BenchTarget, timeoutSeconds: Double = 120, ready: @escaping () -> Void) -> SubscriberReport? {
        let loop = EventLoop()
        let group = SubscriberGroup(tally: DeliveryTally(expected: subscribers * messages))
        var failed = false
        let deadline = LoopTimer(loop: loop)
        func finish() {
            deadline.close()
            group.close()
        }
        deadline.start(after: UInt64(timeoutSeconds * 1000)) {
            failed = true
            finish()
        }
        group.open(
            count: subscribers, collection: collection, since: since, loop: loop, target: target, ready: ready,
            failed: {
                failed = true
                finish()
            }, complete: finish)
        loop.run()
        loop.close()
        guard !failed else { return nil }
        return SubscriberReport(delivered: group.tally.delivered, lastDelivery: group.tally.lastDelivery, latencies: group.tally.latencies)
    }
}
