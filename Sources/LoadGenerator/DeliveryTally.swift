import EventLoop

/// Counts fan-out deliveries and their latencies across all subscribers of one process: every
/// payload carries its send time, found in the raw bytes by a `TimestampScanner`.
final class DeliveryTally {
    let expected: Int
    private(set) var latencies = LatencyHistogram()
    private(set) var delivered = 0
    private(set) var lastDelivery: UInt64 = 0
    /// Time from the writer's acknowledgement to each delivery (0 when the delivery came
    /// first): with the writer on another node, the cross-node part of the path, commit to
    /// delivery, without the commit itself.
    private(set) var afterAcknowledgement = LatencyHistogram()
    /// When the writer's acknowledgement came, by the send stamp the change carries.
    private var acknowledgedAt: [UInt64: UInt64] = [:]

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
                afterAcknowledgement.add(acknowledgedAt[stamp].map { now > $0 ? now - $0 : 0 } ?? 0)
                delivered += 1
            }
            lastDelivery = now
            return delivered >= expected
        }
    }

    /// The writer's change sent at `stamp` was acknowledged now.
    func acknowledged(sentAt stamp: UInt64) {
        acknowledgedAt[stamp] = EventLoop.monotonicNanoseconds()
    }
}

/// What the subscribers of one helper process saw, as it reports it on its last output line
/// (`report DELIVERED LAST-DELIVERY HISTOGRAM`); monotonic clocks are shared by processes.
public struct SubscriberReport: Sendable {
    public var delivered: Int
    public var lastDelivery: UInt64
    var latencies: LatencyHistogram

    init(delivered: Int, lastDelivery: UInt64, latencies: LatencyHistogram) {
        self.delivered = delivered
        self.lastDelivery = lastDelivery
        self.latencies = latencies
    }

    public var line: String { "report \(delivered) \(lastDelivery) \(latencies.encoded)" }

    public init?(line: String) {
        let parts = line.split(separator: " ", maxSplits: 3)
        guard parts.count == 4, parts[0] == "report", let delivered = Int(parts[1]), let last = UInt64(parts[2]),
            let latencies = LatencyHistogram(encoded: parts[3])
        else { return nil }
        self.init(delivered: delivered, lastDelivery: last, latencies: latencies)
    }
}
