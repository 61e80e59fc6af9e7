import AgentDecisions
import EventLoop
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// Collections: made from folders, subscribed, detached when their folder goes, dropped and
/// renamed on the server, brought forward onto a restored store.
extension SyncEngine {
    func startMirroring(_ collection: String) {
        guard CollectionLifecycle.start(wasMirrored: wasMirrored(collection), folderExists: mirror.hasFolder(collection)) == .mirror else {
            return detach(collection)
        }
        try? mirror.ensureFolder(mirror.folder(collection))
        tell(.watchFolder(collection))
        subscribe(collection)
        if subscriptions.sharesConflicts { subscribe(Names.conflictsCollection(of: collection)) }
    }

    /// The collection a name stands for (itself, or the one whose conflicts companion it is).
    func baseCollection(_ name: String) -> String {
        Names.collection(ofConflicts: name) ?? name
    }

    /// Hands a conflict copy just written beside a record to the collection's companion, which
    /// sends it to the server and so to every other mirror.
    func shareConflictCopy(_ collection: String, _ path: String) {
        let name = (path as NSString).lastPathComponent
        guard Names.collection(ofConflicts: collection) == nil, let id = MirrorFolder.conflictCopyID(forFileName: name) else { return }
        reconcile(Names.conflictsCollection(of: collection), id)
    }

    /// The folder of a mirrored collection is gone (deleted, moved away): stop mirroring it here
    /// and say so, like Syncthing with a missing folder marker; never read it as "delete all".
    func detach(_ collection: String) {
        guard subscriptions.detach(collection) else { return }
        tell(.folderGone(collection))
        settlingDeletes.drop(collection)
        notePending()
        for name in [collection, Names.conflictsCollection(of: collection)] where subscriptions.unsubscribe(name) {
            link.send(.unsubscribe(collection: name))
        }
        status.report("the folder is missing: \(collection) is no longer mirrored here and nothing was deleted; make the folder again to download it afresh",
                      for: "\(collection)/")
        log("the folder of \(collection) is missing: stopped mirroring it here; nothing is deleted on the server")
        status.changed()
    }

    /// Whether this mirror has synced the collection before (its state knows a seq or records).
    func wasMirrored(_ collection: String) -> Bool {
        (state.lastSeq[collection] ?? 0) > 0 || !(state.records[collection]?.isEmpty ?? true)
    }

    /// The collection was deleted on the server: its folder is moved to `.plistsync/dropped/`
    /// (what people typed stays on disk) and what was known of it is forgotten.
    func collectionDropped(_ name: String, while when: String = "by its admin") {
        guard Names.isValidCollection(name), allowed(name) else { return }
        subscriptions.dropped(name)
        settlingDeletes.drop(name)
        notePending()
        for collection in [name, Names.conflictsCollection(of: name)] {
            saveState { try state.forget(collection) }
        }
        tell(.folderGone(name))
        if mirror.attachedCollections.contains(name) {
            status.report("deleted on the server \(when); the app's file is left as it is", for: "\(name)/")
        } else if let archived = mirror.archive(name) {
            status.report("deleted on the server \(when); the folder was moved to \(archived)", for: "\(name)/")
        } else {
            status.report("deleted on the server \(when)", for: "\(name)/")
        }
        log("\(name) was deleted on the server: \(status.problems["\(name)/"] ?? "")")
        status.changed()
    }

    /// The collection has a new name: the folder and everything known follow it, then the
    /// connection starts over so every subscription is made under the new name.
    func collectionRenamed(_ from: String, to: String) {
        guard Names.isValidCollection(from), Names.isValidCollection(to), allowed(from) else { return }
        tell(.folderGone(from))
        let decision: CollectionLifecycle.Rename
        switch CollectionLifecycle.rename(attached: mirror.attachedCollections.contains(from), hasFolder: mirror.hasFolder(from)) {
        case .decided(let rename): decision = rename
        case .moveFolder: decision = CollectionLifecycle.rename(folderMoved: mirror.renameCollection(from, to: to))
        }
        if decision == .follow {
            saveState { try state.rename(from, to: to) }
            saveState { try state.rename(Names.conflictsCollection(of: from), to: Names.conflictsCollection(of: to)) }
            log("\(from) was renamed \(to) on the server; the folder follows")
        } else {
            // The old name's folder (or attached file) stays here and is synced as a new
            // collection of that name; the renamed one is downloaded afresh.
            saveState { try state.forget(from) }
            saveState { try state.forget(Names.conflictsCollection(of: from)) }
            status.report(decision == .keepAttachedFile
                ? "renamed \(to) on the server; the app file attached to \(from) is synced as a new collection \(from) until it is attached to \(to) (plistsync attach, then restart the agent)"
                : "renamed \(to) on the server, but a folder \(to) is already here: the folder \(from) is left as it is and is synced as a new collection \(from)",
                for: "\(from)/")
            log("\(from) was renamed \(to) on the server: \(status.problems["\(from)/"] ?? "")")
        }
        subscriptions.setRole(from, nil)
        link.restart()
    }

    /// The folder of a detached collection is back: forget what was known and download it all.
    func reattach(_ collection: String) {
        guard subscriptions.reattach(collection) else { return }
        saveState { try state.forget(collection) }
        saveState { try state.forget(Names.conflictsCollection(of: collection)) }
        order.forget(collection)
        status.clearProblem(for: "\(collection)/")
        log("the folder of \(collection) is back: downloading it afresh")
        if subscriptions.role(collection) != nil { startMirroring(collection) } else { create(collection) }
    }

    /// A folder the user made becomes a collection.
    func create(_ collection: String) {
        if subscriptions.isDetached(collection) { return reattach(collection) }
        guard link.isReady, subscriptions.knowsCollections, allowed(collection), subscriptions.role(collection) == nil,
            subscriptions.startCreating(collection)
        else { return }
        link.send(.create(collection: collection)) { [self] event in
            subscriptions.createAnswered(collection)
            switch event {
            case .ok:
                log("created collection \(collection) from its folder")
                subscriptions.setRole(collection, .admin)
                startMirroring(collection)
            case .error(_, let code, let message, _) where code.isTemporary:
                // The server cannot take it for now (a full disk, a stalled store): the folder
                // would wait for the next login, so ask again, while the folder is still here.
                log("cannot create collection \(collection) for now: \(code) \(message); retrying in a second")
                clock.after(PushQueue.firstRetryMilliseconds) { [self] in
                    guard mirror.hasFolder(collection) || mirror.attachedCollections.contains(collection) else { return }
                    create(collection)
                }
            case .error(_, let code, let message, _):
                log("cannot create collection \(collection): \(code) \(message)")
                status.report("\(code) \(message)", for: "\(collection)/")
            default:
                break
            }
        }
    }

    func subscribe(_ collection: String) {
        // While rebasing on a restored store every replay is whole: the rebase ends only with
        // one that wrote every change (a retry or a restart must not end it halfway).
        let since = state.isRebasing(collection) ? 0 : state.lastSeq[collection] ?? 0
        guard link.isReady, subscriptions.startSubscribing(collection, full: since == 0) else { return }
        failedApplies.replayStarting(collection)
        let isCompanion = Names.collection(ofConflicts: collection) != nil
        // At start the order file is compared with the synced order: an edit made while the
        // agent was stopped is read after the replay, like any other.
        if !isCompanion, order.base(collection) == nil {
            order.setBase(collection, OrderBase(hash: state.orderHash[collection], ids: currentOrder(collection)))
        }
        link.send(.subscribe(collection: collection, since: since)) { [self] event in
            let written = subscriptions.subscribeAnswered(collection)
            switch event {
            case .ok(_, let reply, _):
                let seen = subscriptions.subscribeSucceeded(collection)
                failedApplyReplayEnded(collection)
                if !failedApplies.hasFailed(collection), case .subscribed(_, let seq) = reply, seq > state.lastSeq[collection] ?? 0 {
                    saveState { try state.setLastSeq(seq, collection) }
                }
                if let seen { forgetRecords(in: collection, except: seen) }
                status.noteSynced()
                scan(collection, skipping: written)
                readOrderEdits(collection)
                order.markDirty(collection)
                batchEnded()
            case .error(_, .expired, _, _):
                log("\(collection): changes since \(since) are no longer kept; resyncing in full")
                saveState { try state.setLastSeq(0, collection) }
                subscribe(collection)
            case .error(_, .badRequest, _, _) where isCompanion:
                subscriptions.conflictsNotShared()
                log("the server does not keep conflict copies (\(collection)); they stay on the machine that made them")
            case .error(_, let code, let message, _) where code.isTemporary:
                // The server cannot answer for now (its store stalled, it is busy): the
                // collection would get no changes until the next login, so ask again.
                log("cannot subscribe to \(collection) for now: \(code) \(message); retrying in a second")
                clock.after(PushQueue.firstRetryMilliseconds) { [self] in
                    let base = baseCollection(collection)
                    guard subscriptions.role(base) != nil, !subscriptions.isDetached(base) else { return }
                    subscribe(collection)
                }
            case .error(_, let code, let message, _):
                log("cannot subscribe to \(collection): \(code) \(message)")
            default:
                break
            }
        }
    }

    /// After a full replay: records the server no longer has (a purged tombstone) are gone.
    /// On a store restored from an older backup they were made after it: forgotten here, their
    /// files go up as new records.
    func forgetRecords(in collection: String, except seen: Set<RecordID>) {
        if state.isRebasing(collection) {
            for id in (state.records[collection] ?? [:]).keys where !seen.contains(id) {
                // A change that could not be written here is gone with the record: the file
                // it would have replaced is this mirror's to send.
                pushes.noteUnwritten(RecordKey(collection: collection, id: id), hash: nil)
                saveState { try state.set(nil, collection, id) }
            }
            // A change of the replay that could not be written is judged on its retry against
            // the rev synced before the restore, which is newer: it would be taken for old news.
            if !failedApplies.hasFailed(collection) { saveState { try state.endRebase(collection) } }
            return
        }
        for (id, entry) in state.records[collection] ?? [:] where !seen.contains(id) {
            let path = mirror.recordPath(collection, id)
            if entry.isLive, let bytes = mirror.read(path), ContentHash.of(bytes) == entry.fileHash {
                mirror.keepVersion(collection, id)
                // A save landing meanwhile stays, and goes up as a new record.
                try? mirror.remove(path, guard: .init(expectedHash: entry.fileHash))
            }
            saveState { try state.set(nil, collection, id) }
        }
    }
}
