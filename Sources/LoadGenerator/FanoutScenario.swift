import EventLoop
import Foundation

/// `bench fanout`: one writer, M subscribers; write-to-delivery latency of every change at every
/// subscriber (the write includes its durable commit), paced or as fast as the writer can.
public struct FanoutScenario {
    public var subscribers: Int
    public var messages: Int
    /// Changes per second; 0 means blast (64 writes in flight).
    public var rate: Int
    public var collection = "bench_fanout"

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

        public var deliveredPerSecond: Double { Double(delivered) / seconds }
    }

    public func run(against target: BenchTarget) -> Result? {
        let loop = EventLoop()
        var subscriberConnections: [BenchConnection] = []
        var firstSend: UInt64 = 0
        var failed = false
        let tally = DeliveryTally(expected: subscribers * messages)
        let padding = String(repeating: "x", count: 120)

        func finish() {
            for connection in subscriberConnections { connection.connection.close() }
        }

        func startWriting(_ writer: BenchConnection) {
            var sent = 0
            var acked = 0
            func sendOne() {
                let now = EventLoop.monotonicNanoseconds()
                if firstSend == 0 { firstSend = now }
                writer.send("w PUT \(collection) m\(sent) 0 {\"pad\":\"\(padding)\",\"t\":\(now)}")
                sent += 1
            }
            writer.onLine = { line in
                guard line.hasPrefix("w ") else { return }
                acked += 1
                if rate == 0, sent < messages { sendOne() }
                if acked == messages { writer.connection.close() }
            }
            if rate == 0 {
                for _ in 0..<min(64, messages) { sendOne() }
            } else {
                let timer = LoopTimer(loop: loop)
                let started = EventLoop.monotonicNanoseconds()
                timer.start(after: 1, repeatEvery: 1) {
                    let due = min(messages, Int(Double(EventLoop.monotonicNanoseconds() - started) / 1e9 * Double(rate)) + 1)
                    while sent < due { sendOne() }
                    if sent == messages { timer.close() }
                }
            }
        }

        func subscribed() {
            BenchConnection.open(loop: loop, target: target) { writer in
                guard let writer else {
                    failed = true
                    return finish()
                }
                startWriting(writer)
            }
        }

        func connectSubscribers(since seq: String) {
            var ready = 0
            for _ in 0..<subscribers {
                BenchConnection.open(loop: loop, target: target) { client in
                    guard let client else {
                        failed = true
                        return finish()
                    }
                    subscriberConnections.append(client)
                    client.onLine = { line in
                        if line.hasPrefix("s OK SUB") {
                            // From here on, read raw bytes the way the peer clients do, so the
                            // client's cost per message is the same for every system measured.
                            let read = tally.subscriberReader()
                            client.connection.onData = { bytes in
                                if read(bytes) { finish() }
                            }
                            ready += 1
                            if ready == subscribers { subscribed() }
                        } else if line.hasPrefix("* BYE") {
                            failed = true
                        }
                    }
                    // A subscriber the server drops (e.g. * BYE SLOW) fails the run instead of hanging it.
                    client.onClosed = {
                        failed = true
                        finish()
                    }
                    client.send("s SUB \(collection) SINCE \(seq)")
                }
            }
        }

        BenchConnection.open(loop: loop, target: target) { setup in
            guard let setup else {
                failed = true
                return
            }
            // Subscribe from the current seq, so earlier runs' changes are not replayed.
            setup.onLine = { line in
                guard line.hasPrefix("s OK STATS") else { return }
                let seq = Self.integer(in: Array(line.utf8), after: Array("\"seq\":".utf8)) ?? 0
                setup.connection.close()
                connectSubscribers(since: String(seq))
            }
            setup.send("c CREATE \(collection)")
            setup.send("s STATS")
        }
        loop.run()
        loop.close()
        guard !failed, tally.lastDelivery > firstSend else { return nil }
        return Result(
            delivered: tally.delivered, expected: tally.expected, seconds: Double(tally.lastDelivery - firstSend) / 1e9,
            latency: tally.latencies.summary)
    }

    static func integer(in line: [UInt8], after marker: [UInt8]) -> UInt64? {
        guard line.count > marker.count else { return nil }
        var index = 0
        while index + marker.count <= line.count {
            if line[index] == marker[0], Array(line[index..<(index + marker.count)]) == marker {
                var value: UInt64 = 0
                var cursor = index + marker.count
                while cursor < line.count, line[cursor] >= 0x30, line[cursor] <= 0x39 {
                    value = value * 10 + UInt64(line[cursor] - 0x30)
                    cursor += 1
                }
                return value
            }
            index += 1
        }
        return nil
    }
}
