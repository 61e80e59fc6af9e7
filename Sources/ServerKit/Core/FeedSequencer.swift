import SyncCore

/// Puts the changes a node learns of — its own commits, and others' read from the shared
/// change log — into one gap-free feed in seq order: a change goes out only once every seq
/// before it has. Pure: the caller fetches what `missing` names and hands it back.
struct FeedSequencer {
    /// The last seq handed out in order.
    private(set) var deliveredThrough: Int64
    /// The highest seq known to be committed (by anyone).
    private(set) var knownThrough: Int64
    private var waiting: [Int64: Change] = [:]

    init(deliveredThrough: Int64) {
        self.deliveredThrough = deliveredThrough
        knownThrough = deliveredThrough
    }

    /// Adds changes (in any order; ones already delivered are ignored) and returns the ones
    /// that are now next in line, in seq order.
    mutating func add(_ changes: [Change]) -> [Change] {
        for change in changes where change.seq > deliveredThrough {
            waiting[change.seq] = change
            knownThrough = max(knownThrough, change.seq)
        }
        var ready: [Change] = []
        while let next = waiting.removeValue(forKey: deliveredThrough + 1) {
            ready.append(next)
            deliveredThrough = next.seq
        }
        return ready
    }

    /// Another node committed through `seq`.
    mutating func committed(through seq: Int64) {
        knownThrough = max(knownThrough, seq)
    }

    /// The seqs to read from the change log before the feed can go on: from the next one due to
    /// just before the first change already held (or through the highest known); nil when
    /// nothing is missing.
    var missing: ClosedRange<Int64>? {
        guard knownThrough > deliveredThrough else { return nil }
        let firstHeld = waiting.keys.min() ?? (knownThrough + 1)
        guard firstHeld > deliveredThrough + 1 else { return nil }
        return (deliveredThrough + 1)...(firstHeld - 1)
    }

    /// The change log no longer has `range` (pruned): skip past it; the caller must tell the
    /// subscribers they may have missed changes.
    mutating func skip(through seq: Int64) -> [Change] {
        deliveredThrough = max(deliveredThrough, seq)
        waiting = waiting.filter { $0.key > deliveredThrough }
        return add([])
    }
}
