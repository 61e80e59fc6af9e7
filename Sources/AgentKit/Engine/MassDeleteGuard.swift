import AgentDecisions
import SyncCore

/// Deletes pushed recently, per collection, and deletes held for a person to confirm or undo
/// (`plistsync deletes`) because too many went at once (`DeleteHold` decides).
final class MassDeleteGuard {
    /// When each recent delete was pushed, per collection.
    private var recent: [String: [Double]] = [:]
    private var held: [String: Set<RecordID>] = [:]

    /// Whether pushing `count` more deletes now would pass `limit` within `window` seconds.
    func isMassDelete(_ collection: String, adding count: Int, now: Double, limit: Int, window: Double) -> Bool {
        DeleteHold.isMassDelete(recent: &recent[collection, default: []], adding: count, now: now, limit: limit, window: window)
    }

    func pushed(_ collection: String, count: Int, now: Double) {
        recent[collection, default: []].append(contentsOf: Array(repeating: now, count: count))
    }

    func isHolding(_ collection: String) -> Bool {
        held[collection] != nil
    }

    func held(_ collection: String) -> Set<RecordID>? {
        held[collection]
    }

    /// Holds more deletes; answers whether the hold is new and how many it holds.
    func hold(_ collection: String, _ ids: [RecordID]) -> (new: Bool, count: Int) {
        let new = held[collection] == nil
        held[collection, default: []].formUnion(ids)
        return (new, held[collection]!.count)
    }

    func keepHolding(_ collection: String, _ ids: [RecordID]) {
        held[collection] = Set(ids)
    }

    func release(_ collection: String) {
        held[collection] = nil
    }
}
