/// How long the change log keeps what (`serve --history-days`), and what thinning it lets go
/// (pure): every change for a day; then a record's latest change of each hour for a week; then
/// its latest of each day until `keepSeconds`; after that only each record's latest change (as
/// long as the record). A listing or revert reaches back only as far as the log is whole: the
/// day before thinning starts.
public struct HistoryRetention: Sendable, Equatable {
    /// Seconds since 1970 the purge runs at.
    public var now: Int64
    public var keepSeconds: Int64

    public init(now: Int64, keepSeconds: Int64) {
        (self.now, self.keepSeconds) = (now, keepSeconds)
    }

    public static let wholeSeconds: Int64 = 86_400
    public static let hourlySeconds: Int64 = 7 * 86_400

    /// Changes made before this are gone (but each record's latest).
    public var cutoff: Int64 { now - keepSeconds }

    /// The tiers thinning applies, oldest last: changes made in `from..<to` keep a record's
    /// latest of each `bucket` seconds.
    public var tiers: [(from: Int64, to: Int64, bucket: Int64)] {
        var tiers: [(from: Int64, to: Int64, bucket: Int64)] = []
        for (younger, older, bucket) in [(Self.wholeSeconds, Self.hourlySeconds, Int64(3600)), (Self.hourlySeconds, keepSeconds, Int64(86_400))] {
            let to = Self.floor(now - min(younger, keepSeconds), bucket)
            let from = max(cutoff, now - older)
            if from < to { tiers.append((from, to, bucket)) }
        }
        return tiers
    }

    /// Changes made before this may have been thinned: no listing before it can be rebuilt.
    public var wholeFrom: Int64 { tiers.map(\.to).max() ?? cutoff }

    private static func floor(_ time: Int64, _ bucket: Int64) -> Int64 {
        time >= 0 ? time / bucket * bucket : -((-time + bucket - 1) / bucket) * bucket
    }

    /// One logged change as thinning sees it.
    public struct Entry: Sendable, Equatable {
        public var seq: Int64
        public var record: RecordID
        public var collection: String
        public var at: Int64
        public var previous: Int64?

        public init(seq: Int64, collection: String, id: String, at: Int64, previous: Int64?) {
            (self.seq, self.collection, self.record, self.at, self.previous) = (seq, collection, RecordID(id), at, previous)
        }
    }

    /// What thinning a tier's changes (in seq order) lets go, and the change before each kept
    /// one whose change before was let go (its chain skips the gap).
    public static func thin(_ entries: [Entry], bucket: Int64) -> (drop: [Int64], relink: [(seq: Int64, previous: Int64?)]) {
        var lastOfRecord: [String: [RecordID: Int]] = [:]
        var dropped = Set<Int64>()
        for (index, entry) in entries.enumerated() {
            if let before = lastOfRecord[entry.collection]?[entry.record], floor(entries[before].at, bucket) == floor(entry.at, bucket) {
                dropped.insert(entries[before].seq)
            }
            lastOfRecord[entry.collection, default: [:]][entry.record] = index
        }
        guard !dropped.isEmpty else { return ([], []) }
        var previousOf: [Int64: Int64?] = [:]
        for entry in entries { previousOf[entry.seq] = entry.previous }
        var relink: [(seq: Int64, previous: Int64?)] = []
        for entry in entries where !dropped.contains(entry.seq) {
            guard let previous = entry.previous, dropped.contains(previous) else { continue }
            var target: Int64? = previous
            while let seq = target, dropped.contains(seq) { target = previousOf[seq] ?? nil }
            relink.append((entry.seq, target))
        }
        return (entries.map(\.seq).filter(dropped.contains), relink)
    }
}
