import SyncCore

/// Record files found missing, waiting a moment before they become DELs (`rm -rf` of a folder
/// removes the files first; an editor's save renames a file away and back). Each collection's
/// waiting deletes form a round, so a timer of a round whose files all came back does not act
/// on the next one.
final class DeleteSettler {
    private var waiting: [String: Set<RecordID>] = [:]
    private var rounds: [String: Int] = [:]

    static let settleMilliseconds: UInt64 = 500

    var pendingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }

    /// A file is missing; answers the new round when it starts one (its timer is the caller's).
    func missing(_ key: RecordKey) -> Int? {
        let first = waiting[key.collection]?.isEmpty ?? true
        waiting[key.collection, default: []].insert(key.id)
        guard first else { return nil }
        rounds[key.collection, default: 0] += 1
        return rounds[key.collection]
    }

    /// The file is back: not a delete. False when it was not waiting.
    func back(_ key: RecordKey) -> Bool {
        guard waiting[key.collection]?.remove(key.id) != nil else { return false }
        if waiting[key.collection]?.isEmpty == true { waiting[key.collection] = nil }
        return true
    }

    /// The round's timer fired: the ids still waiting, if the round is still the current one.
    func settle(_ collection: String, round: Int) -> Set<RecordID>? {
        guard rounds[collection] == round else { return nil }
        return waiting.removeValue(forKey: collection)
    }

    /// The collection is no longer mirrored: its waiting deletes are not sent.
    func drop(_ collection: String) {
        waiting[collection] = nil
    }
}
