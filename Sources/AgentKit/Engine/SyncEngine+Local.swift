import AgentDecisions
import EventLoop
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The local side: scans, a record file against what was synced (`LocalChange`), deletes that
/// settle before they are sent, pushes and their retries.
extension SyncEngine {
    // MARK: - Local side

    /// Reconciles every file and every known record of a collection (but those `skipping`).
    func scan(_ collection: String, skipping written: Set<RecordID> = []) {
        guard subscriptions.isSubscribed(collection) else { return }
        // A vanished folder is not read as "delete everything".
        guard mirror.hasFolder(collection) else { return detach(baseCollection(collection)) }
        status.clearProblem(for: "\(baseCollection(collection))/")
        status.rechecked(collection)
        let ids = Set(mirror.recordIDs(in: collection)).union(state.records[collection]?.keys ?? [:].keys)
        for id in inOrderFileOrder(collection, ids) where !written.contains(id) && !fileEventPending(RecordKey(collection: collection, id: id)) {
            reconcile(collection, id)
        }
    }

    /// `ids` in the order the collection's order file lists them, then the rest by id: new
    /// records go up in the order they are placed (the server puts each after the last), so a
    /// collection made from a folder or an app's file needs no moves to take its order, and no
    /// mirror ever writes the order they would pass through (issue 46: an app that dragged a
    /// row back to it lost the drag, read as a save from a load made before them).
    private func inOrderFileOrder(_ collection: String, _ ids: Set<RecordID>) -> [RecordID] {
        guard case .ids(_, let listed) = readOrderFile(collection) else { return ids.sorted() }
        return ids.ordered(by: listed)
    }

    /// Reconciles all subscribed collections (the periodic backstop and event-overflow path).
    func scanAll() {
        for folder in mirror.collectionFolders() + mirror.attachedCollections.sorted()
        where subscriptions.knowsCollections && (subscriptions.role(folder) == nil || subscriptions.isDetached(folder)) {
            create(folder)
        }
        for collection in subscriptions.subscribed { scan(collection) }
    }

    /// A file event for one record (nil id: rescan the collection).
    func fileChanged(_ collection: String, _ id: RecordID?) {
        guard let id else { return scan(collection) }
        reconcile(collection, id)
        // A file gone from a name a twin waits for (a folding file system): the twin gets it,
        // also when the record itself was already deleted (nothing to push, nothing applied).
        if mirror.foldsNames != false, mirror.kind(at: mirror.recordPath(collection, id)) == .missing {
            reviveTwins(of: RecordKey(collection: collection, id: id))
        }
    }

    static let symbolicLinkProblem = "a symbolic link: links are not followed; replace it with a file to sync it"

    /// Compares one record's file with the last synced state and pushes the difference (what
    /// to do is `LocalChange`'s to decide).
    func reconcile(_ collection: String, _ id: RecordID) {
        let key = RecordKey(collection: collection, id: id)
        let path = mirror.recordPath(collection, id)
        var file: LocalFile
        switch mirror.kind(at: path) {
        case .missing: file = .missing
        case .link: file = .link
        case .other: file = .notAFile
        case .file: file = mirror.read(path).map(LocalFile.file) ?? .missing
        }
        // The file is back (an editor's save renames it away, then writes it anew): not a delete.
        if file != .missing, settlingDeletes.back(key) { notePending() }
        guard subscriptions.isSubscribed(collection), !pushes.isBusy(key) else {
            // Saved again after the replay wrote it: the scan that ends the replay reads it.
            if subscriptions.wasWrittenInReplay(collection, id), file.bytes.map(ContentHash.of) != state.entry(collection, id)?.fileHash {
                subscriptions.changedInReplay(collection, id)
            }
            return
        }
        // A file at its path may be a twin's (a folding file system): then its own is gone
        // (a delete), or it never had one here. A record waiting for a twin's name waits
        // while the twin still holds it.
        let synced = state.entry(collection, id)
        if file != .missing || synced?.fileHash == SyncedRecord.nameClash, isNameClash(key, synced: synced, live: synced?.isLive ?? true) {
            guard file != .missing, synced?.missingFileIsADelete == true, mirror.clashingName(collection, id) != nil else { return }
            file = .missing
        } else if let synced, synced.fileHash == SyncedRecord.nameClash, file.bytes != nil {
            // A file of its own name stands there now, made here while the record waited for
            // the name: the server's state arrives onto it like any record onto a file (merged).
            saveState { try state.set(nil, collection, id) }
            let fields = synced.fieldsJSON.flatMap { try? ValueJSON.decodeFields(Array($0.utf8)) }
            applyRemote(collection, id, RemoteState(rev: synced.rev, position: synced.position, fields: fields))
            return
        }
        if file != .link, status.problems[key.description] == Self.symbolicLinkProblem { status.clearProblem(for: key.description) }
        if file.bytes != nil, pushes.refusedHash(key) == Self.refusedDelete { pushes.refuse(key, hash: nil) }
        let change = LocalChange.decide(
            collection: collection, id: id, file: file, synced: state.entry(collection, id),
            refusedHashes: Set([pushes.refusedHash(key), pushes.unwrittenHash(key)].compactMap { $0 }),
            deleteRefused: deleteIsHeldBack(key),
            maxRecordBytes: link.maxRecordBytes, maxLineBytes: link.maxLineBytes)
        if case .unparseable = change {} else if file.bytes != nil || file == .missing { status.clearUnparseable(for: key.description) }
        switch change {
        case .symbolicLink:
            // Never followed (it could point anywhere on the machine), pushed or deleted.
            if status.problems[key.description] == nil { log("not syncing \(collection)/\(id).plist: it is a symbolic link") }
            status.report(Self.symbolicLinkProblem, for: key.description)
            status.changed()
        case .notAFile:
            status.report("a folder or special file stands where this record's file belongs; not synced", for: key.description)
            status.changed()
        case .missing(let deletable):
            if deletable {
                deleteWhenSettled(key)
            } else if synced == nil {
                // A new file gone before its create went through: an order edit that waited for
                // its placement is read now.
                order.markDirty(collection)
            }
        case .unchanged:
            break
        case .writeSynced:
            status.clearProblem(for: nameClashProblemKey(key))
            order.markDirty(collection)
            if !restoreDeletedFile(collection, id) {
                // A full disk: tried again, like a change that could not be written.
                clock.after(ApplyRetries.retryMilliseconds) { [self] in
                    reconcile(collection, id)
                    batchEnded()
                }
            }
        case .unparseable(let reason):
            // Half-written or broken: never pushed; looked at again when the file changes.
            if status.unparseable[key.description] == nil { log("not pushing \(collection)/\(id).plist: \(reason)") }
            status.reportUnparseable(reason, for: key.description)
            status.changed()
        case .adopt(let hash, let format):
            guard var entry = state.entry(collection, id) else { break }
            entry.fileHash = hash
            entry.format = format
            saveState { try state.set(entry, collection, id) }
        case .tooLarge(let size, let hash):
            if pushes.refusedHash(key) != hash { log("not pushing \(collection)/\(id).plist: \(size) bytes, over the server's limit") }
            status.report("too large: \(size) bytes of fields; the server takes at most \(link.maxRecordBytes)", for: key.description)
            pushes.refuse(key, hash: hash)
            status.changed()
        case .push(let command, let hash, let json, let format):
            push(key, command, hash: hash, fieldsJSON: json, format: format)
        }
    }

    /// A change could not be written: keep the last seq before it and replay from there soon.
    func applyFailed(_ collection: String, seq: Int64) {
        let first = failedApplies.failed(collection, seq: seq)
        if (state.lastSeq[collection] ?? 0) >= seq { saveState { try state.setLastSeq(seq - 1, collection) } }
        if first { retryFailedApply(collection) }
    }

    /// Replays the collection from before its first failed change soon. The failure is cleared
    /// only by a replay that ends with no new one: until then the last seq never passes it
    /// (a live change applied meanwhile must not carry it past, or a restart skips the change).
    func retryFailedApply(_ collection: String) {
        clock.after(ApplyRetries.retryMilliseconds) { [self] in
            guard failedApplies.hasFailed(collection), subscriptions.unsubscribe(collection) else { return }
            subscribe(collection)
        }
    }

    /// The replay of a collection with failed changes has ended (a retry, or a new subscription
    /// after a reconnect: either replays from before the first failure).
    func failedApplyReplayEnded(_ collection: String) {
        if failedApplies.replayEnded(collection) { retryFailedApply(collection) }
    }

    /// The synced state of a record whose file is gone, when that is a delete to push: it was
    /// live, had a file here, the server has not refused this delete already, and no change
    /// from the server waits to be written there.
    func deletableEntry(_ key: RecordKey) -> AgentState.Entry? {
        guard let entry = state.entry(key.collection, key.id), entry.missingFileIsADelete, !deleteIsHeldBack(key) else { return nil }
        return entry
    }

    /// Whether a missing file of this record must not go up as a delete: the server refused
    /// that delete, or a change from it waits to be written there.
    func deleteIsHeldBack(_ key: RecordKey) -> Bool {
        pushes.refusedHash(key) == Self.refusedDelete || pushes.unwrittenHash(key) == Self.unwrittenOverMissingFile
    }

    /// Waits a moment before a missing file becomes a DEL: when its whole folder is going away,
    /// the folder is gone by then and the collection is detached instead.
    func deleteWhenSettled(_ key: RecordKey) {
        let round = settlingDeletes.missing(key)
        notePending()
        guard let round else { return }
        clock.after(DeleteSettler.settleMilliseconds) { [self] in
            guard let ids = settlingDeletes.settle(key.collection, round: round) else { return }
            notePending()
            guard mirror.hasFolder(key.collection) else { return detach(baseCollection(key.collection)) }
            let ready = stillDeleted(key.collection, ids)
            guard !ready.isEmpty else { return }
            if massDeletes.isHolding(key.collection) || isMassDelete(key.collection, adding: ready.count) {
                hold(key.collection, ready)
            } else {
                pushDeletes(key.collection, ready)
            }
            batchEnded()
        }
    }

    /// The ids (of `ids`) whose files are still missing and whose deletes can be pushed now.
    func stillDeleted(_ collection: String, _ ids: Set<RecordID>) -> [RecordID] {
        ids.sorted().filter { id in
            let key = RecordKey(collection: collection, id: id)
            let path = mirror.recordPath(collection, id)
            // A twin's file at its path (a folding file system) is not its own.
            let gone = mirror.kind(at: path) == .missing && mirror.read(path) == nil || mirror.clashingName(collection, id) != nil
            return subscriptions.isSubscribed(collection) && !pushes.isBusy(key) && gone && deletableEntry(key) != nil
        }
    }

    func pushDeletes(_ collection: String, _ ids: [RecordID]) {
        massDeletes.pushed(collection, count: ids.count, now: clock.now.timeIntervalSinceReferenceDate)
        for id in ids {
            let key = RecordKey(collection: collection, id: id)
            guard let entry = deletableEntry(key) else { continue }
            push(key, .delete(collection: collection, id: id.string, baseRev: entry.rev), hash: nil, fieldsJSON: nil, format: entry.format)
        }
    }

    /// Local changes not yet on the server, for `status`: pushes in flight or waiting for a
    /// retry, and deletes waiting to settle.
    func notePending() {
        let pending = pushes.pendingCount + settlingDeletes.pendingCount
        guard status.pending != pending else { return }
        status.setPending(pending)
        status.changed()
    }

    func retryLater(_ key: RecordKey) {
        let delay = pushes.retryDelayStarting(key)
        notePending()
        clock.after(delay) { [self] in
            pushes.retryDue(key)
            notePending()
            reconcile(key.collection, key.id)
            // The retry may send nothing (the row is gone): an order edit that waited for it is
            // read now.
            order.writeAnswered(key.collection)
            batchEnded()
        }
    }

    func push(_ key: RecordKey, _ command: Command, hash: String?, fieldsJSON: String?, format: PlistFile.Format) {
        guard link.isReady else { return }
        pushes.sent(key)
        notePending()
        link.send(command) { [self] event in
            pushes.answered(key)
            notePending()
            order.writeAnswered(key.collection)
            switch event {
            case .ok(_, let reply, _):
                guard case .written(_, _, _, let rev, _) = reply else { break }
                var entry = state.entry(key.collection, key.id)
                    ?? AgentState.Entry(rev: rev, position: nil, fieldsJSON: nil, fileHash: nil, format: format)
                entry.rev = rev
                entry.fieldsJSON = fieldsJSON
                entry.fileHash = hash
                #if SIMULATION_MUTATIONS
                if Mutation.active == .saveDuringPushTakenAsPushed, hash != nil {
                    entry.fileHash = mirror.read(mirror.recordPath(key.collection, key.id)).map(ContentHash.of)
                }
                #endif
                entry.format = format
                if fieldsJSON == nil {
                    // Deleted here: the echo of this change carries nothing new, so the order
                    // file drops the row now.
                    entry.position = nil
                    order.markDirty(key.collection)
                }
                saveState { try state.set(entry, key.collection, key.id) }
                if fieldsJSON == nil { reviveTwins(of: key) }
                pushes.succeeded(key)
                status.clearProblem(for: key.description)
                status.notePushed()
                status.noteSynced()
            case .error(_, .conflict, _, let current?):
                applyRemote(key.collection, key.id, current, fromConflict: true)
            case .error(_, let code, let message, _) where code.isTemporary:
                log("server refused \(key) for now: \(code) \(message); retrying")
                status.report("\(code) \(message); retrying", for: key.description)
                #if SIMULATION_MUTATIONS
                if Mutation.active == .refusedPushNeverRetried { break }
                #endif
                retryLater(key)
            case .error(_, let code, let message, _):
                log("server refused \(key): \(code) \(message)")
                status.report("\(code) \(message)", for: key.description)
                pushes.refuse(key, hash: hash ?? Self.refusedDelete)
            default:
                break
            }
            // The file may have changed again while the push was in flight, or a merge needs pushing.
            reconcile(key.collection, key.id)
            batchEnded()
        }
    }
}
