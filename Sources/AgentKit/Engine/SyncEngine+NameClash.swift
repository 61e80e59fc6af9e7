import AgentDecisions
import SyncCore

/// Twin ids on file systems that fold names (`MirrorFolder+NameClash`): a record whose path
/// leads to a twin's file is reported and waits for the name; a twin's file gone for good
/// lets it have one.
extension SyncEngine {
    /// Whether the path of `key` leads to another record's file on this file system (their ids
    /// differ only in Unicode normalisation or case, `MirrorFolder+NameClash`): then the record
    /// is reported (when `live`: a deleted one has nothing to report), and neither read from
    /// nor written to that file.
    func isNameClash(_ key: RecordKey, synced: SyncedRecord?, live: Bool) -> Bool {
        // A twin whose file is gone but whose delete is not done yet still holds the name for
        // a record without a file of its own here.
        let holder = { [self] in synced?.mayBeNameClash ?? true && mirror.foldsNames == true ? twinHoldingName(key).map { $0.string + ".plist" } : nil }
        guard let other = mirror.clashingName(key.collection, key.id) ?? holder() else {
            // (Every reconcile comes here: the key is spelled only when there are problems.)
            if !status.problems.isEmpty, status.problems[nameClashProblemKey(key)]?.hasPrefix(Self.nameClashProblem) == true {
                status.clearProblem(for: nameClashProblemKey(key))
            }
            return false
        }
        let problemKey = nameClashProblemKey(key)
        // A deleted record has nothing to report.
        guard live else { return true }
        if status.problems[problemKey] == nil { log("not syncing \(key) here: this file system takes its name for \(other)'s") }
        status.report(Self.nameClashProblem + " as \(other), another record's file (the names differ only in Unicode normalisation or case); not synced to this folder", for: problemKey)
        status.changed()
        return true
    }

    static let nameClashProblem = "this file system cannot hold this record's file under the same name"

    /// Keyed by the id's scalars: Swift takes the twins' `collection/id` keys for one.
    func nameClashProblemKey(_ key: RecordKey) -> String {
        key.collection + "/" + key.id.string.unicodeScalars.map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
    }

    /// A twin of the record (`RecordID.foldsTogether`) that has, or is about to delete, a file
    /// at its path.
    func twinHoldingName(_ key: RecordKey) -> RecordID? {
        (state.records[key.collection] ?? [:]).first { id, entry in
            id.foldsTogether(with: key.id) && entry.missingFileIsADelete
        }?.key
    }

    /// A record's file is gone for good: a twin waiting for its name gets its file now, and one
    /// whose file waited for it is pushed.
    func reviveTwins(of key: RecordKey) {
        let folds = mirror.foldsNames
        guard folds != false else { return }
        var twins = Set((state.records[key.collection] ?? [:]).keys.filter { $0.foldsTogether(with: key.id) })
        // New files that waited for the name wait only where folding is known (the twin-holding
        // rule): the folder is not listed for them on every delete while that is unknown.
        if folds == true { twins.formUnion(mirror.recordIDs(in: key.collection).filter { $0.foldsTogether(with: key.id) }) }
        for id in twins.sorted() { reconcile(key.collection, id) }
    }
}
