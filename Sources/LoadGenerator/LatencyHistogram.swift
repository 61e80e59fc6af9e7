import Foundation

/// Latencies in nanoseconds kept as a log-linear histogram (128 steps per doubling, so a
/// percentile is within 1 % of the exact value): constant memory however many samples, and
/// histograms from several client processes merge by adding counts. The first
/// `exactLimit` samples are also kept as they are, so small runs (30 propagation trials)
/// report exact percentiles.
struct LatencyHistogram {
    private static let exactLimit = 100_000
    private var exact: [UInt64] = []
    private static let exactBits = 7
    private static let steps = 1 << exactBits
    private static let half = steps / 2
    private var counts = [UInt64](repeating: 0, count: steps + 57 * half)
    private(set) var count = 0
    private(set) var maximum: UInt64 = 0

    mutating func add(_ nanoseconds: UInt64) {
        counts[Self.bucket(of: nanoseconds)] += 1
        if count == exact.count, count < Self.exactLimit { exact.append(nanoseconds) }
        count += 1
        maximum = max(maximum, nanoseconds)
    }

    mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        if count == exact.count, other.count == other.exact.count, count + other.count <= Self.exactLimit {
            exact += other.exact
        } else {
            exact = []
        }
        count += other.count
        maximum = max(maximum, other.maximum)
    }

    /// p in 0...100, in milliseconds (the middle of the bucket holding that rank).
    func percentile(_ p: Double) -> Double {
        guard count > 0 else { return 0 }
        if exact.count == count {
            let sorted = exact.sorted()
            return Double(sorted[min(count - 1, Int((p / 100) * Double(count)))]) / 1e6
        }
        let rank = UInt64(min(Double(count - 1), (p / 100) * Double(count)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += bucketCount
            if seen > rank { return Double(min(Self.middle(of: index), maximum)) / 1e6 }
        }
        return Double(maximum) / 1e6
    }

    var summary: LatencySummary {
        LatencySummary(p50Milliseconds: percentile(50), p99Milliseconds: percentile(99), maxMilliseconds: Double(maximum) / 1e6)
    }

    /// `max index:count index:count ...`: how a helper process hands its histogram over.
    var encoded: String {
        var words = [String(maximum)]
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 { words.append("\(index):\(bucketCount)") }
        return words.joined(separator: " ")
    }

    init() {}

    init?(encoded text: Substring) {
        let words = text.split(separator: " ")
        guard let first = words.first, let maximum = UInt64(first) else { return nil }
        self.maximum = maximum
        for word in words.dropFirst() {
            let parts = word.split(separator: ":")
            guard parts.count == 2, let index = Int(parts[0]), counts.indices.contains(index), let bucketCount = UInt64(parts[1]) else { return nil }
            counts[index] += bucketCount
            count += Int(bucketCount)
        }
    }

    private static func bucket(of value: UInt64) -> Int {
        let bits = UInt64.bitWidth - value.leadingZeroBitCount
        guard bits > exactBits else { return Int(value) }
        let shift = bits - exactBits
        return steps + (shift - 1) * half + Int(value >> UInt64(shift)) - half
    }

    private static func middle(of index: Int) -> UInt64 {
        guard index >= steps else { return UInt64(index) }
        let shift = (index - steps) / half + 1
        let top = UInt64((index - steps) % half + half)
        return (top << UInt64(shift)) + (UInt64(1) << UInt64(shift - 1))
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
