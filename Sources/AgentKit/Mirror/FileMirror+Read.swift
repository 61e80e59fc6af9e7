import AgentDecisions
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// Reading a save of an app file into its shadow: only what the app changed since it loaded the
/// file goes in; what changed elsewhere meanwhile (fields, deletes, moves) is not undone.
extension FileMirror {
    /// Reads every attached file (at start), then makes each show its shadow: a crash can lose
    /// the last second of history, after which a file the app saved back to an older version
    /// looks like nothing new, and would keep showing what the collection no longer holds. (An
    /// empty shadow is left to the first download: the file is not emptied before it.)
    func readAll() {
        for file in files {
            read(file, atStart: true)
            if !shadowRecords(file.collection).isEmpty { shadowsChanged(file.collection) }
        }
    }

    /// The app saved its file: split it into the shadow. `atStart`: the file as found when the
    /// agent starts, which may be one the agent wrote before a crash cost its history.
    func read(_ file: AttachedFile, atStart: Bool = false) {
        let collection = file.collection
        guard let bytes = mirror.read(path(file)) else {
            // A file the app removed is written again from the collection, never read as
            // "delete every record".
            if history.knownHash(collection) != nil { history.forgetHash(collection) }
            return rebuild(file)
        }
        let hash = ContentHash.of(bytes)
        guard hash != history.knownHash(collection) else { return }
        let entries: [CollectionFile.Entry]
        do {
            let (read, kind) = try CollectionFile.entries(bytes, idKey: file.idKey, newID: { UUID().uuidString })
            entries = read
            kinds[collection] = kind
        } catch {
            if status.unparseable[file.name] == nil { log("not reading \(file.name): \(error)") }
            status.reportUnparseable("\(error)", for: file.name)
            return status.changed()
        }
        status.clearUnparseable(for: file.name)
        // Shadow writes by the engine since the last rebuild still need one; this read's own don't.
        let shadow = shadowRecords(collection)
        let save = AppFileSave.read(entries.map { (RecordID($0.id), $0.fields) }, versions: history.versions(collection),
                                    latestOrder: history.knownOrder(collection) ?? [], shadow: shadow, shadowOrder: shadowOrder(collection),
                                    historyGap: historyGaps.contains(collection))
        // A shadow file that cannot be written (a full disk): the save is not taken as read,
        // and is read again later; remembered as read, its edits would count as seen and a
        // later stale save would drop them.
        var unwritten = false
        var keptAsCopies: Set<RecordID> = []
        for write in save.writes {
            let recordPath = mirror.recordPath(collection, write.id)
            if let other = mirror.clashingName(collection, write.id) {
                // This file system takes the row's name for another row's shadow file (ids that
                // differ only in normalisation or case): kept as a conflict copy, which reaches
                // every mirror, instead of being written over the other row.
                if keepAsConflictCopy(write.fields, collection, write.id, because: "\(file.name): the row \(write.id) cannot be kept beside \(other) on this file system") {
                    keptAsCopies.insert(write.id)
                } else {
                    unwritten = true
                }
                continue
            }
            // The save may have replaced a value its app never showed: what it replaces stays
            // in sight as a conflict copy.
            var replacedIsACopy = true
            #if SIMULATION_MUTATIONS
            if Mutation.active == .staleSaveKeptAsVersion, write.keepReplaced {
                mirror.keepVersion(collection, write.id)
                replacedIsACopy = false
            }
            #endif
            if write.keepReplaced, replacedIsACopy, let replaced = shadow[write.id],
               !keepAsConflictCopy(replaced, collection, write.id, because: "\(file.name): a save changed \(write.id), which changed elsewhere since the app last saved")
            {
                unwritten = true
                continue
            }
            do {
                try mirror.writeAtomically(PlistFile.encode(.dictionary(write.fields), as: .binary), to: recordPath)
            } catch {
                log("cannot write \(recordPath): \(error)")
                unwritten = true
                continue
            }
            shadowChanged(collection, write.id)
        }
        for id in save.removes where mirror.clashingName(collection, id) == nil {
            if save.keepRemoved.contains(id), let removed = shadow[id],
               !keepAsConflictCopy(removed, collection, id, because: "\(file.name): a save deleted \(id), which changed elsewhere since the app last saved")
            {
                unwritten = true
                continue
            }
            mirror.remove(mirror.recordPath(collection, id))
            shadowChanged(collection, id)
        }
        // A row this file system cannot hold beside a twin's shadow file (kept as a conflict
        // copy now or before) is not in the shadow: an order naming it would wait for its
        // create for ever.
        if let saved = save.order, !unwritten {
            let held = heldByTwins(collection, among: saved, shadow: shadow.keys)
            let ids = saved.filter { !held.contains($0) }
            let order = PlistFile.encode(ids.plistArray, as: .xml)
            if mirror.read(mirror.orderPath(collection)) != order {
                do {
                    try mirror.writeAtomically(order, to: mirror.orderPath(collection))
                    shadowChanged(collection, nil)
                } catch {
                    log("cannot write \(mirror.orderPath(collection)): \(error)")
                    unwritten = true
                }
            }
        }
        _ = refreshCache()
        guard !unwritten else { return readAgainLater(file) }
        // Found at start showing exactly the shadow, it is most likely the agent's own last
        // write: the app is not taken to have seen its rows (a later save lacking one is then
        // read as a load from before it, not as a delete). The shadow's order file may still
        // list a row whose delete is not done (simulation seed 481: taken for the app's save,
        // a row that came just before a crash was deleted by a save from a load before it).
        let records = AppFileHistory.records(entries)
        let shownOrder = shadowOrder(collection).filter { records[$0] != nil }
        let byApp = !(atStart && records == shadowRecords(collection) && entries.map(\.id).recordIDs == shownOrder)
        history.remember(collection, entries, bytes, byApp: byApp)
        // Taken for the agent's own write that the history lost (a crash; not a first read,
        // which fills the shadow): the app may have loaded any version in between, so its next
        // save keeps whatever it replaces (simulation seed 2418).
        if byApp {
            historyGaps.remove(collection)
        } else if atStart, save.writes.isEmpty, save.removes.isEmpty {
            historyGaps.insert(collection)
        }
        // Whatever the file does not show of the shadow (a change the save missed, one that
        // arrived while the app saved, one a crash kept from the history) is written into it:
        // the file is rebuilt whenever it differs from the shadow after a read.
        if save.missed || !keptAsCopies.isEmpty || dirty.contains(collection) || shadowRecords(collection) != records
            || shownOrder != entries.map(\.id).recordIDs.filter(Set(shownOrder).contains)
        {
            shadowsChanged(collection)
        }
    }

    /// Ids of `ids` whose shadow file's name this file system gives to a twin's file (ids that
    /// differ only in normalisation or case). Only ids with a twin among the rows are looked up.
    func heldByTwins(_ collection: String, among ids: [RecordID], shadow: some Collection<RecordID>) -> Set<RecordID> {
        guard mirror.foldsNames != false else { return [] }
        var spellings: [String: Int] = [:]
        for id in Set(ids).union(shadow) { spellings[id.string.lowercased(), default: 0] += 1 }
        return Set(ids.filter { spellings[$0.string.lowercased(), default: 0] > 1 && mirror.clashingName(collection, $0) != nil })
    }

    /// Writes `fields` as a conflict copy of `collection`/`id` (it reaches every mirror and the
    /// server), saying `why` in the log; false when it cannot be written (the save is read again
    /// later).
    private func keepAsConflictCopy(_ fields: Fields, _ collection: String, _ id: RecordID, because why: String) -> Bool {
        do {
            let copy = try mirror.writeConflictCopy(PlistFile.encode(.dictionary(fields), as: .binary), collection, id, device: device)
            log("\(why); kept as \(copy)")
            status.noteConflict(copy)
            if let copyID = MirrorFolder.conflictCopyID(forFileName: (copy as NSString).lastPathComponent) {
                shadowChanged(Names.conflictsCollection(of: collection), copyID)
            }
            return true
        } catch {
            log("cannot write a conflict copy of \(collection)/\(id): \(error)")
            return false
        }
    }
}
