/// Changes from the server that could not be written here (a full disk, a folder in the way),
/// per collection: the first seq that failed (the last seq is not advanced past it), and how
/// many failed, so a retry replay that adds no failure clears them.
final class ApplyRetries {
    private var firstFailedSeq: [String: Int64] = [:]
    private var failures: [String: Int] = [:]
    /// The failure count when a retry replay started.
    private var failuresAtReplay: [String: Int] = [:]

    static let retryMilliseconds: UInt64 = 2_000

    func hasFailed(_ collection: String) -> Bool {
        firstFailedSeq[collection] != nil
    }

    /// A change failed; true when it is the collection's first (the caller schedules a retry).
    func failed(_ collection: String, seq: Int64) -> Bool {
        let first = firstFailedSeq[collection] == nil
        firstFailedSeq[collection] = min(firstFailedSeq[collection] ?? seq, seq)
        failures[collection, default: 0] += 1
        return first
    }

    /// A replay of the collection starts (it replays from before the first failure).
    func replayStarting(_ collection: String) {
        if firstFailedSeq[collection] != nil { failuresAtReplay[collection] = failures[collection, default: 0] }
    }

    /// A replay ended: true when failures remain that need another retry.
    func replayEnded(_ collection: String) -> Bool {
        guard let baseline = failuresAtReplay.removeValue(forKey: collection) else { return false }
        if failures[collection, default: 0] == baseline {
            firstFailedSeq[collection] = nil
            return false
        }
        return firstFailedSeq[collection] != nil
    }
}
