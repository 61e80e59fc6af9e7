import EventLoop
import SyncClient
import SyncCore
import SyncProtocol
import Foundation

/// `bench put`: N connections, each keeping `window` PUTs of ~200-byte records in flight,
/// counting durable acknowledgements.
public struct PutScenario {
    public var clients: Int
    public var seconds: Double
    public var window: Int
    public var collection = "bench_put"
    /// When above 0: update records `r0`…`r<n-1>` of `collection` (made by `Populate`, rev 1)
    /// picked at random, each client its own share, instead of writing records of its own.
    public var existingRecords = 0

    public init(clients: Int, seconds: Double, window: Int) {
        self.clients = clients
        self.seconds = seconds
        self.window = window
    }

    /// What one run measured.
    public struct Result: Sendable {
        public var acknowledged: Int
        public var seconds: Double
        public var latency: LatencySummary
        public var errors: Int

        public var perSecond: Double { Double(acknowledged) / seconds }
    }

    public func run(against target: BenchTarget) -> Result? {
        let loop = EventLoop()
        var connections: [ClientConnection] = []
        var latencies = LatencyHistogram()
        var acknowledged = 0
        var errors = 0
        var measuring = false
        var startNanos: UInt64 = 0
        var endNanos: UInt64 = 0
        var failed = false
        let padding = String(repeating: "x", count: 150)

        func begin() {
            startNanos = EventLoop.monotonicNanoseconds()
            measuring = true
            for (clientIndex, client) in connections.enumerated() {
                var sentAt: [UInt64] = []
                var head = 0
                var revs = [Int](repeating: 0, count: window)
                var pendingSlots: [Int] = []
                var updateRevs: [Int: Int] = [:]
                var random = SystemRandomNumberGenerator()
                let share = existingRecords / clients
                func update() {
                    let index = clientIndex + clients * Int.random(in: 0..<share, using: &random)
                    let rev = updateRevs[index] ?? 1
                    let fields = "{\"name\":\"Record \(index)\",\"serial\":\"SN-\(index)\",\"value\":\(rev)}"
                    client.send(.put(collection: collection, id: "r\(index)", baseRev: Int64(rev), fieldsJSON: fields), tag: "p")
                    sentAt.append(EventLoop.monotonicNanoseconds())
                    pendingSlots.append(index)
                }
                func put(_ slot: Int) {
                    if share > 0 { return update() }
                    // The record's fields, formatted here in canonical key order rather than
                    // by ValueJSON (1.5 µs a request, a quarter of this client's cost per
                    // acknowledgement): the client's share of the cores stays what it is when
                    // the same shape runs against a peer.
                    let fields = "{\"name\":\"record \(slot)\",\"pad\":\"\(padding)\",\"serial\":\"SN-\(clientIndex)-\(slot)\",\"value\":\(revs[slot])}"
                    client.send(.put(collection: collection, id: "c\(clientIndex)-\(slot)", baseRev: Int64(revs[slot]), fieldsJSON: fields), tag: "p")
                    sentAt.append(EventLoop.monotonicNanoseconds())
                    pendingSlots.append(slot)
                }
                // Replies are read as raw bytes, as the peer clients read theirs, so the client
                // costs the same per reply whatever it measures. Only this client writes its
                // records, so an OK means the next base rev is one more.
                var now: UInt64 = 0
                func reply(_ received: ReceivedLine) {
                    let line = received.bytes
                    let slot = pendingSlots[head]
                    let started = sentAt[head]
                    head += 1
                    if head > 4096 {
                        sentAt.removeFirst(head)
                        pendingSlots.removeFirst(head)
                        head = 0
                    }
                    if line.count > 2, line[line.startIndex + 2] == UInt8(ascii: "O") {
                        if share > 0 { updateRevs[slot, default: 1] += 1 } else { revs[slot] += 1 }
                        if measuring {
                            acknowledged += 1
                            latencies.add(now - started)
                        }
                    } else {
                        errors += 1
                        if case .error(_, .conflict, _, let current?) = received.event {
                            if share > 0 { updateRevs[slot] = Int(current.rev) } else { revs[slot] = Int(current.rev) }
                        }
                    }
                    if measuring { put(slot) } else if head == sentAt.count { client.close() }
                }
                client.onBatch = { starting in if starting { now = EventLoop.monotonicNanoseconds() } }
                client.onReply = { line in reply(line) }
                for slot in 0..<window { put(slot) }
            }
            let timer = LoopTimer(loop: loop)
            timer.start(after: UInt64(seconds * 1000)) {
                measuring = false
                endNanos = EventLoop.monotonicNanoseconds()
                timer.close()
            }
        }

        func connectAll() {
            var ready = 0
            for index in 0..<clients {
                target.spread(index).open(on: loop) { client in
                    guard let client else {
                        failed = true
                        loop.stop()
                        return
                    }
                    connections.append(client)
                    ready += 1
                    if ready == clients { begin() }
                }
            }
        }

        // The first connection makes sure the collection exists.
        target.open(on: loop) { setup in
            guard let setup else {
                failed = true
                return
            }
            setup.send(.create(collection: collection)) { _ in
                setup.close()
                connectAll()
            }
        }
        loop.run()
        for connection in connections { connection.close() }
        loop.runOnce(wait: false)
        loop.close()
        guard !failed, endNanos > startNanos else { return nil }
        let elapsed = Double(endNanos - startNanos) / 1e9
        return Result(
            acknowledged: acknowledged, seconds: elapsed, latency: latencies.summary, errors: errors)
    }
}
