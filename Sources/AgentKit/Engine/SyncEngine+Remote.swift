import AgentDecisions
import EventLoop
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The remote side: a server state applied to the file (`RemoteChange`), merges and writes.
extension SyncEngine {
    // MARK: - Remote side

    /// Applies a server state to the file and the state (what to do is `RemoteChange`'s to
    /// decide); false when the file could not be written (nothing is recorded then).
    @discardableResult
    func applyRemote(_ collection: String, _ id: RecordID, _ remote: RemoteState, fromConflict: Bool = false, seq: Int64? = nil) -> Bool {
        let key = RecordKey(collection: collection, id: id)
        let entry = state.entry(collection, id)
        let path = mirror.recordPath(collection, id)
        let bytes = mirror.read(path, standing: mirror.kind(at: path))
        let fileHash = bytes.map(ContentHash.of)
        // The file's age matters only for an edit here (a save in progress): no stat otherwise.
        let fileAge = fileHash != nil && fileHash != entry?.fileHash
            ? mirror.fileSystem.modificationDate(path).map { clock.now.timeIntervalSince($0) } : nil
        let context = RemoteChange.Context(
            fromConflict: fromConflict, seq: seq, rebasing: state.isRebasing(collection), restoredSeq: state.restoredSeq,
            isConflictCopies: Names.collection(ofConflicts: collection) != nil, isShadow: mirror.isShadow(collection), fileAge: fileAge,
            nameClash: isNameClash(key, synced: entry, live: remote.isLive))
        let (next, action): (SyncedRecord, RemoteChange.Action)
        switch RemoteChange.decide(remote, synced: entry, local: bytes, context: context) {
        case .forget:
            if entry != nil { saveState { try state.set(nil, collection, id) } }
            return true
        case .rebase(let rebased):
            // A change of the old store that could not be written here is gone with it: the
            // file is this mirror's to send again.
            pushes.noteUnwritten(key, hash: nil)
            saveState { try state.set(rebased, collection, id) }
            order.markDirty(collection)
            return true
        case .nothingNew(let moved):
            pushes.noteUnwritten(key, hash: nil)
            if let moved {
                saveState { try state.set(moved, collection, id) }
                order.markDirty(collection)
            }
            return true
        case .waitForSave:
            // On a store restored from a backup the revision synced here belongs to the old
            // store: a save pushed against it could match a revision the restored store gave
            // another mirror's state, and replace it unseen (simulation seed 6027). Pushed as a
            // create instead, it meets that state as a CONFLICT and is merged.
            if context.rebasing, var stale = entry, stale.rev > 0, remote.isLive, remote.rev <= stale.rev {
                stale.rev = 0
                saveState { try state.set(stale, collection, id) }
            }
            return false
        case .nameClash(let recorded):
            saveState { try state.set(recorded, collection, id) }
            // A twin that waited for this record's name (its delete here) may go ahead now.
            reviveTwins(of: key)
            return true
        case .moveCopyAside:
            guard let moved = mirror.moveConflictCopyAside(path),
                let movedID = MirrorFolder.conflictCopyID(forFileName: (moved as NSString).lastPathComponent)
            else { return false }
            log("\(collection)/\(id): another machine made a conflict copy of the same name; this one is now \(movedID)")
            reconcile(collection, movedID)
            return applyRemote(collection, id, remote, fromConflict: fromConflict, seq: seq)
        case .apply(let decided, let decidedAction):
            (next, action) = (decided, decidedAction)
        }
        // A save made while this change is written wins the race: the change is then not
        // recorded, and the save goes up against the old revision, to be merged (CONFLICT).
        let writeGuard = MirrorFolder.WriteGuard(expectedHash: fileHash) { [self] in
            saveState { try state.set(entry, collection, id) }
            log("\(collection)/\(id): saved here while a change from the server was being written; merging the two")
            clock.after(0) { [self] in reconcile(collection, id) }
        }
        var applied = next
        do {
            switch action {
            case .take(let fields, let keepFile):
                if keepFile { mirror.keepVersion(collection, id) }
                applied.fileHash = try writeRecord(fields, next.format, path, guard: writeGuard)
                subscriptions.wroteInReplay(collection, id)
            case .remove:
                mirror.keepVersion(collection, id)
                try mirror.remove(path, guard: writeGuard)
            case .bothDeleted:
                break
            case .merge(let local, let remoteFields, let baseKnown):
                // The merge may drop what the file held (a field the other side removed): the
                // file is kept first, like any file a remote change replaces.
                mirror.keepVersion(collection, id)
                try merge(collection, id, local: local, base: baseKnown ? entry : nil, remote: remoteFields, format: next.format, path: path, guard: writeGuard)
            case .restore(let fields):
                applied.fileHash = try writeRecord(fields, next.format, path, guard: writeGuard)
                subscriptions.wroteInReplay(collection, id)
                log("\(collection)/\(id): edited on the server after it was deleted here; the record is back")
            case .keepEdit:
                log("\(collection)/\(id): deleted on the server while edited here; keeping the edit")
            case .keepDelete:
                break
            }
        } catch MirrorError.superseded {
            return true
        } catch {
            log("cannot write \(path): \(error)")
            status.report("cannot write: \(error)", for: key.description)
            pushes.noteUnwritten(key, hash: fileHash ?? Self.unwrittenOverMissingFile)
            return false
        }
        pushes.noteUnwritten(key, hash: nil)
        saveState { try state.set(applied, collection, id) }
        // Rewriting the order file sorts the whole collection: only for a change to what it
        // lists (a record placed, moved, deleted, made again, or its name given to a twin), not
        // for every edit of fields.
        let listed = { (record: SyncedRecord?) in record.map { ($0.isLive, $0.position, $0.fileHash == SyncedRecord.nameClash) } }
        if listed(applied) ?? (false, nil, false) != listed(entry) ?? (false, nil, false) { order.markDirty(collection) }
        if applied.fileHash == nil { reviveTwins(of: key) }
        if remote.isLive, context.isConflictCopies { status.noteConflictCopy(path) }
        if status.problems[key.description]?.hasPrefix("cannot") == true { status.clearProblem(for: key.description) }
        if fromConflict || fileHash != entry?.fileHash { reconcile(collection, id) }
        return true
    }

    /// Marks a delete the server refused, so it is not retried until the file comes back.
    static let refusedDelete = "refused-delete"
    /// Marks a change that could not be written where the file is missing (a record deleted
    /// here that changed there, a full disk): the missing file is not a delete while it waits.
    static let unwrittenOverMissingFile = "unwritten-over-missing-file"

    /// Three-way merge of a local edit with a server change, written to the record's file.
    func merge(_ collection: String, _ id: RecordID, local bytes: [UInt8], base entry: AgentState.Entry?,
                       remote: Fields, format: PlistFile.Format, path: String, guard writeGuard: MirrorFolder.WriteGuard) throws {
        guard let (localFields, localFormat) = try? PlistFile.decodeRecord(bytes) else {
            // A broken local file cannot be merged: keep its bytes as a conflict copy.
            let copy = try mirror.writeConflictCopy(bytes, collection, id, device: configuration.device)
            log("\(collection)/\(id): local file does not parse; kept as \(copy)")
            status.noteConflict(copy)
            shareConflictCopy(collection, copy)
            _ = try writeRecord(remote, format, path, guard: writeGuard)
            return
        }
        let base = entry?.fieldsJSON.flatMap { try? ValueJSON.decodeFields(Array($0.utf8)) }
        let result = ThreeWayMerge.merge(base: base, local: localFields, remote: remote)
        var keepsLocal = result.hasConflicts
        #if SIMULATION_MUTATIONS
        if Mutation.active == .mergeConflictCopySkipped { keepsLocal = false }
        #endif
        if keepsLocal {
            let copy = try mirror.writeConflictCopy(PlistFile.encode(.dictionary(localFields), as: localFormat), collection, id, device: configuration.device)
            log("\(collection)/\(id): both sides changed \(result.conflictingKeys.joined(separator: ", ")); the server's value stays, yours is in \(copy)")
            status.noteConflict(copy)
            shareConflictCopy(collection, copy)
        }
        _ = try writeRecord(result.merged, localFormat, path, guard: writeGuard)
    }

    func writeRecord(_ fields: Fields, _ format: PlistFile.Format, _ path: String, guard writeGuard: MirrorFolder.WriteGuard? = nil) throws -> String {
        let bytes = PlistFile.encode(.dictionary(fields), as: format)
        try mirror.writeAtomically(bytes, to: path, guard: writeGuard)
        return ContentHash.of(bytes)
    }
}
