import EventLoop
import Foundation
import SyncProtocol

/// A load-generator client connection: sends lines, hands back received lines.
final class BenchConnection {
    let connection: TCPConnection
    private var framer = LineFramer(maxLineBytes: 4 << 20)
    var onLine: (String) -> Void = { _ in }
    var onClosed: () -> Void = {}

    init(_ connection: TCPConnection) {
        self.connection = connection
        // The connection owns its client until it closes (close() drops these closures).
        connection.onData = { [self] bytes in
            framer.append(bytes)
            while let line = try? framer.nextLine() { onLine(String(decoding: line, as: UTF8.self)) }
        }
        connection.onEnd = { [self] _ in
            onClosed()
            connection.close()
        }
        connection.startReading()
    }

    func send(_ line: String) {
        connection.write(line)
        connection.write(CollectionOfOne(0x0A))
    }

    /// Connects, says HELLO and logs in, then calls `ready` (nil on failure).
    static func open(
        loop: EventLoop, target: BenchTarget, ready: @escaping (BenchConnection?) -> Void
    ) {
        TCPConnection.connect(on: loop, to: target.address) { result in
            guard case .success(let tcp) = result else { return ready(nil) }
            let client = BenchConnection(tcp)
            client.onLine = { [unowned client] line in
                if line.hasPrefix("a OK AUTH") {
                    client.onLine = { _ in }
                    ready(client)
                } else if line.hasPrefix("a ERR") {
                    ready(nil)
                }
            }
            client.send("h HELLO 1 bench")
            client.send("a AUTH \(ResponseLine.argument(target.user)) \(ResponseLine.argument(target.password))")
        }
    }
}

/// Where the load goes, and as whom.
public struct BenchTarget: Sendable {
    public var address: SocketAddress
    public var user: String
    public var password: String

    public init(address: SocketAddress, user: String, password: String) {
        self.address = address
        self.user = user
        self.password = password
    }
}

/// Latency samples in nanoseconds, summarised as percentiles.
struct LatencySamples {
    private(set) var values: [UInt64] = []

    mutating func add(_ nanoseconds: UInt64) { values.append(nanoseconds) }

    var count: Int { values.count }

    /// p in 0...100, in milliseconds.
    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((p / 100) * Double(sorted.count)))
        return Double(sorted[index]) / 1e6
    }

    var summary: LatencySummary {
        LatencySummary(p50Milliseconds: percentile(50), p99Milliseconds: percentile(99), maxMilliseconds: Double(values.max() ?? 0) / 1e6)
    }
}

/// The latency figures a scenario reports.
public struct LatencySummary: Sendable {
    public var p50Milliseconds: Double
    public var p99Milliseconds: Double
    public var maxMilliseconds: Double

    /// `p50 X ms p99 Y ms max Z ms`.
    public var text: String {
        String(format: "p50 %.3f ms p99 %.3f ms max %.3f ms", p50Milliseconds, p99Milliseconds, maxMilliseconds)
    }
}

/// Counts fan-out deliveries and their latencies across all subscribers of one run: every
/// payload carries its send time, found in the raw bytes by a `TimestampScanner`.
final class DeliveryTally {
    let expected: Int
    private(set) var latencies = LatencySamples()
    private(set) var delivered = 0
    private(set) var lastDelivery: UInt64 = 0

    init(expected: Int) {
        self.expected = expected
    }

    /// A reader for one subscriber connection's bytes; it answers true once every expected
    /// message has arrived (at any subscriber).
    func subscriberReader() -> ([UInt8]) -> Bool {
        var scanner = TimestampScanner()
        return { [self] bytes in
            let now = EventLoop.monotonicNanoseconds()
            scanner.scan(bytes) { stamp in
                latencies.add(now &- stamp)
                delivered += 1
            }
            lastDelivery = now
            return delivered >= expected
        }
    }
}
