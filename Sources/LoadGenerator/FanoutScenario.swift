import EventLoop
import SyncClient
import SyncCore
import SyncProtocol
import Foundation

/// `bench fanout`: one writer, M subscribers; write-to-delivery latency of every change at every
/// subscriber (the write includes its durable commit), paced or as fast as the writer can.
public struct FanoutScenario {
    public var subscribers: Int
    public var messages: Int
    /// Changes per second; 0 means blast (64 writes in flight).
    public var rate: Int
    public var collection = "bench_fanout"
    /// The HTTP API's address: subscribers are event streams there (`GET …/events`) instead of
    /// line-protocol connections; the writer is the same.
    public var eventStreams: SocketAddress?

    public init(subscribers: Int, messages: Int, rate: Int) {
        self.subscribers = subscribers
        self.messages = messages
        self.rate = rate
    }

    public struct Result: Sendable {
        public var delivered: Int
        public var expected: Int
        public var seconds: Double
        public var latency: LatencySummary
        /// From the writer's acknowledgement to delivery (this process's subscribers only).
        public var afterAcknowledgement: LatencySummary? = nil

        public var deliveredPerSecond: Double { Double(delivered) / seconds }
    }

    /// Runs the shape; with `helpers`, `subscribers` counts only this process's share and the
    /// helpers' subscribers are added to the result.
    public func run(against target: BenchTarget, helpers: SubscriberHelpers? = nil) throws -> Result? {
        let loop = EventLoop()
        var firstSend: UInt64 = 0
        var failed = false
        var helperFailure: (any Error)?
        let group = SubscriberGroup(tally: DeliveryTally(expected: subscribers * messages))
        let streams = EventStreamGroup()
        let padding = String(repeating: "x", count: 120)

        /// `run`: this run's own record ids (the seq it started from), so a second run against
        /// the same server writes new records instead of conflicting with the first's.
        func startWriting(_ writer: ClientConnection, run: String) {
            var sent = 0
            var acked = 0
            var stamps: [UInt64] = []
            func sendOne() {
                let now = EventLoop.monotonicNanoseconds()
                if firstSend == 0 { firstSend = now }
                stamps.append(now)
                let fields = ValueJSON.encode(.dictionary(["pad": .string(padding), "t": .integer(Int64(now))]))
                writer.send(.put(collection: collection, id: "m\(run)-\(sent)", baseRev: 0, fieldsJSON: fields), tag: "w")
                sent += 1
            }
            writer.onReply = { _ in
                // Replies come in request order.
                if acked < stamps.count { group.tally.acknowledged(sentAt: stamps[acked]) }
                acked += 1
                if rate == 0, sent < messages { sendOne() }
                if acked == messages { writer.close() }
            }
            if rate == 0 {
                for _ in 0..<min(64, messages) { sendOne() }
            } else {
                pace(on: loop, rate: rate, total: messages, sent: { sent }, send: sendOne)
            }
        }

        func subscribed(since seq: String) {
            // Nothing flows yet, so blocking the loop while the helpers subscribe costs nothing.
            do {
                try helpers?.start(since: seq)
            } catch {
                helperFailure = error
                return group.close()
            }
            target.open(on: loop) { writer in
                guard let writer else {
                    failed = true
                    return group.close()
                }
                startWriting(writer, run: seq)
            }
        }

        target.open(on: loop) { setup in
            guard let setup else {
                failed = true
                return
            }
            setup.send(.create(collection: collection)) { _ in }
            // Subscribe from the current seq, so earlier runs' changes are not replayed.
            setup.send(.stats) { line in
                guard case .ok(_, _, let stats?) = line.reply, case .integer(let current)? = stats["seq"] else {
                    failed = true
                    return setup.close()
                }
                let seq = String(current)
                let fail = {
                    failed = true
                    group.close()
                    streams.close()
                }
                if let address = eventStreams {
                    setup.send(.tokenNew(label: "bench")) { line in
                        guard case .ok(_, .token(let token), _) = line.reply else { return fail() }
                        setup.close()
                        streams.open(
                            count: subscribers, collection: collection, since: seq, token: token, loop: loop, address: address, tally: group.tally,
                            ready: { subscribed(since: seq) }, failed: fail, complete: streams.close)
                    }
                    return
                }
                setup.close()
                group.open(
                    count: subscribers, collection: collection, since: seq, loop: loop, target: target.subscriberNodes,
                    ready: { subscribed(since: seq) }, failed: fail, complete: group.close)
            }
        }
        loop.run()
        loop.close()
        if let helperFailure { throw helperFailure }
        var delivered = group.tally.delivered
        var expected = group.tally.expected
        var lastDelivery = group.tally.lastDelivery
        var latencies = group.tally.latencies
        if let helpers {
            for report in try helpers.reports() {
                delivered += report.delivered
                expected += report.delivered
                lastDelivery = max(lastDelivery, report.lastDelivery)
                latencies.merge(report.latencies)
            }
        }
        guard !failed, lastDelivery > firstSend else { return nil }
        return Result(delivered: delivered, expected: expected, seconds: Double(lastDelivery - firstSend) / 1e9, latency: latencies.summary,
                      afterAcknowledgement: group.tally.afterAcknowledgement.summary)
    }
}
