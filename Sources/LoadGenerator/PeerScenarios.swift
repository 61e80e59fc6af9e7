import EventLoop
import Foundation

/// The put and fan-out shapes against a peer (Redis, NATS), so PlistSync's figures have a
/// counterpart measured by the same client code in the same run.
public enum PeerScenarios {
    /// `clients` connections each keeping `window` SETs of ~200 bytes in flight for `seconds`.
    public static func put(_ dialect: PeerDialect, at address: SocketAddress, clients: Int, window: Int, seconds: Double) throws -> PutScenario.Result {
        let loop = EventLoop()
        var latencies = LatencyHistogram()
        var acknowledged = 0
        var errors = 0
        var measuring = true
        var connected: [TCPConnection] = []
        var failure: String?
        let value = String(repeating: "v", count: 200)
        let started = EventLoop.monotonicNanoseconds()
        var ended: UInt64 = 0

        for client in 0..<clients {
            TCPConnection.connect(on: loop, to: address) { result in
                guard case .success(let connection) = result else {
                    failure = "cannot connect to \(dialect) at \(address)"
                    return loop.stop()
                }
                connected.append(connection)
                var sentAt: [UInt64] = []
                var head = 0
                var counter = 0
                var replies = dialect.replyCounter()
                var startupLeft = dialect.startupReplies
                func send() {
                    counter += 1
                    connection.write(dialect.put(key: "k\(client)-\(counter % 1000)", value: value))
                    sentAt.append(EventLoop.monotonicNanoseconds())
                }
                connection.onData = { bytes in
                    let now = EventLoop.monotonicNanoseconds()
                    var answered = replies.count(bytes)
                    if startupLeft > 0 {
                        let used = min(startupLeft, answered)
                        startupLeft -= used
                        answered -= used
                        if startupLeft == 0 { for _ in 0..<window { send() } }
                    }
                    for _ in 0..<answered where head < sentAt.count {
                        if measuring {
                            latencies.add(now - sentAt[head])
                            acknowledged += 1
                        }
                        head += 1
                        if measuring { send() }
                    }
                    if head > 4096 {
                        sentAt.removeFirst(head)
                        head = 0
                    }
                    if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "E") { errors += 1 }
                }
                connection.startReading()
                connection.write(dialect.startup)
                if startupLeft == 0 { for _ in 0..<window { send() } }
            }
        }
        let timer = LoopTimer(loop: loop)
        timer.start(after: UInt64(seconds * 1000)) {
            measuring = false
            ended = EventLoop.monotonicNanoseconds()
            timer.close()
            for connection in connected { connection.close() }
        }
        loop.run()
        loop.close()
        if let failure { throw BenchFailure(failure) }
        let elapsed = Double(ended - started) / 1e9
        return PutScenario.Result(acknowledged: acknowledged, seconds: elapsed, latency: latencies.summary, errors: errors)
    }

    /// One publisher, `subscribers` subscribers; `rate` messages a second (0: as fast as a
    /// window of 64 unanswered publishes allows).
    public static func fanout(_ dialect: PeerDialect, at address: SocketAddress, subscribers: Int, messages: Int, rate: Int) throws -> FanoutScenario.Result {
        let loop = EventLoop()
        var connections: [TCPConnection] = []
        var ready = 0
        var firstSend: UInt64 = 0
        var failure: String?
        let tally = DeliveryTally(expected: subscribers * messages)
        let padding = String(repeating: "x", count: 120)
        let channel = "bench_fanout"

        func finish() {
            for connection in connections { connection.close() }
        }

        func startPublishing() {
            TCPConnection.connect(on: loop, to: address) { result in
                guard case .success(let publisher) = result else {
                    failure = "cannot connect the publisher"
                    return finish()
                }
                connections.append(publisher)
                var sent = 0
                var replies = dialect.replyCounter()
                var awaited = dialect.startupReplies
                var started = false
                func publish() {
                    let now = EventLoop.monotonicNanoseconds()
                    if firstSend == 0 { firstSend = now }
                    publisher.write(dialect.publish(channel: channel, payload: "{\"pad\":\"\(padding)\",\"t\":\(now)}"))
                    sent += 1
                }
                // Blast: publish in windows closed by a barrier, so nothing buffers without bound.
                func window() {
                    let count = min(64, messages - sent)
                    for _ in 0..<count { publish() }
                    publisher.write(dialect.barrier)
                    awaited += count * dialect.repliesPerPublish + 1
                }
                func begin() {
                    started = true
                    if rate == 0 { return window() }
                    pace(on: loop, rate: rate, total: messages, sent: { sent }, send: publish)
                }
                publisher.onData = { bytes in
                    awaited -= replies.count(bytes)
                    guard awaited <= 0 else { return }
                    if !started {
                        begin()
                    } else if rate == 0, sent < messages {
                        window()
                    }
                }
                publisher.startReading()
                publisher.write(dialect.startup)
                if awaited == 0 { begin() }
            }
        }

        for _ in 0..<subscribers {
            TCPConnection.connect(on: loop, to: address) { result in
                guard case .success(let connection) = result else {
                    failure = "cannot connect a subscriber"
                    return finish()
                }
                connections.append(connection)
                let read = tally.subscriberReader()
                let decode = dialect.payloadDecoder()
                var replies = dialect.subscriptionCounter()
                var awaited = dialect.startupReplies
                var subscribing = false
                var confirmed = false
                func subscribe() {
                    subscribing = true
                    awaited = dialect.subscribeReplies
                    connection.write(dialect.subscribe(channel: channel))
                }
                connection.onData = { bytes in
                    if !confirmed {
                        awaited -= replies.count(bytes)
                        guard awaited <= 0 else { return }
                        if !subscribing { return subscribe() }
                        confirmed = true
                        ready += 1
                        if ready == subscribers { startPublishing() }
                        return
                    }
                    if dialect == .nats, bytes.starts(with: Array("PING\r\n".utf8)) { connection.write(Array("PONG\r\n".utf8)) }
                    if read(decode?(bytes) ?? bytes) { finish() }
                }
                connection.startReading()
                connection.write(dialect.startup)
                if awaited == 0 { subscribe() }
            }
        }
        let deadline = LoopTimer(loop: loop)
        deadline.start(after: 120_000) {
            failure = "only \(tally.delivered) of \(tally.expected) messages arrived in 120 s"
            finish()
        }
        deadline.unref()
        loop.run()
        deadline.close()
        loop.runOnce(wait: false)
        loop.close()
        if let failure { throw BenchFailure(failure) }
        return FanoutScenario.Result(
            delivered: tally.delivered, expected: tally.expected, seconds: Double(tally.lastDelivery - firstSend) / 1e9,
            latency: tally.latencies.summary)
    }
}
