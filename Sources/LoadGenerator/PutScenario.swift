import EventLoop
import Foundation

/// `bench put`: N connections, each keeping `window` PUTs of ~200-byte records in flight,
/// counting durable acknowledgements.
public struct PutScenario {
    public var clients: Int
    public var seconds: Double
    public var window: Int
    public var collection = "bench_put"

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
        var connections: [BenchConnection] = []
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
                func put(_ slot: Int) {
                    // Keys in canonical (sorted) order, as PlistSync's own clients send them.
                    let fields = "{\"name\":\"record \(slot)\",\"pad\":\"\(padding)\",\"serial\":\"SN-\(clientIndex)-\(slot)\",\"value\":\(revs[slot])}"
                    client.send("p PUT \(collection) c\(clientIndex)-\(slot) \(revs[slot]) \(fields)")
                    sentAt.append(EventLoop.monotonicNanoseconds())
                    pendingSlots.append(slot)
                }
                // Replies are read as raw bytes, as the peer clients read theirs, so the client
                // costs the same per reply whatever it measures. Only this client writes its
                // records, so an OK means the next base rev is one more.
                var partial: [UInt8] = []
                func reply(_ line: ArraySlice<UInt8>, at now: UInt64) {
                    let slot = pendingSlots[head]
                    let started = sentAt[head]
                    head += 1
                    if head > 4096 {
                        sentAt.removeFirst(head)
                        pendingSlots.removeFirst(head)
                        head = 0
                    }
                    if line.count > 2, line[line.startIndex + 2] == UInt8(ascii: "O") {
                        revs[slot] += 1
                        if measuring {
                            acknowledged += 1
                            latencies.add(now - started)
                        }
                    } else {
                        errors += 1
                        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
                        if words.count > 5, words[2] == "CONFLICT", let rev = Int(words[5]) { revs[slot] = rev }
                    }
                    if measuring { put(slot) } else if head == sentAt.count { client.connection.close() }
                }
                client.connection.onData = { bytes in
                    let now = EventLoop.monotonicNanoseconds()
                    let data = partial.isEmpty ? bytes : partial + bytes
                    var lineStart = 0
                    for index in data.indices where data[index] == 0x0A {
                        reply(data[lineStart..<index], at: now)
                        lineStart = index + 1
                    }
                    partial = Array(data[lineStart...])
                }
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
                BenchConnection.open(loop: loop, target: target.spread(index)) { client in
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
        BenchConnection.open(loop: loop, target: target) { setup in
            guard let setup else {
                failed = true
                return
            }
            setup.onLine = { line in
                guard line.hasPrefix("c ") else { return }
                setup.connection.close()
                connectAll()
            }
            setup.send("c CREATE \(collection)")
        }
        loop.run()
        for connection in connections { connection.connection.close() }
        loop.runOnce(wait: false)
        loop.close()
        guard !failed, endNanos > startNanos else { return nil }
        let elapsed = Double(endNanos - startNanos) / 1e9
        return Result(
            acknowledged: acknowledged, seconds: elapsed, latency: latencies.summary, errors: errors)
    }
}
