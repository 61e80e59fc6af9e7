import AgentDecisions
import EventLoop
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The agent's sync rules (DESIGN.md §5): applies server changes to the mirror, pushes local
/// edits with the revision they were based on, and resolves conflicts by three-way merge so
/// nothing anyone typed is lost. Loop-thread object; file events reach it through `fileChanged`.
final class SyncEngine {
    private let configuration: AgentConfiguration
    private let link: any ServerRequests
    private let clock: any AgentClock
    private let state: AgentState
    private let mirror: MirrorFolder
    let status: AgentStatus

    /// Collections the user may read, with their role.
    private(set) var collections: [String: Role] = [:]
    /// Whether `collections` holds the answer to this connection's COLLECTIONS (until then a
    /// folder without a collection is not made one).
    private var knowsCollections = false
    private var subscribed: Set<String> = []
    private var subscribing: Set<String> = []
    private var creating: Set<String> = []
    /// Ids seen in a full (SINCE 0) replay, to forget records the server no longer has.
    private var replaySeen: [String: Set<String>] = [:]
    private var inFlight: Set<RecordKey> = []
    /// Hash of a file the server refused (FORBIDDEN, TOO_LARGE): not retried until it changes.
    private var refused: [RecordKey: String] = [:]
    /// Hash of a file a change from the server could not be written over (a full disk): not
    /// pushed (the server would answer CONFLICT with that change, and the same write would fail
    /// in a loop) until it changes or a change for it is applied.
    private var unwritten: [RecordKey: String] = [:]
    private var orderDirty: Set<String> = []
    /// Collections whose folder vanished after they were mirrored here: not mirrored (and never
    /// mass-deleted) until the folder is made again, then downloaded afresh.
    private var detached: Set<String> = []
    /// Record files found missing, pushed as DEL only after `deleteSettleMilliseconds` if the
    /// file is still gone and its folder still there (`rm -rf` of a folder removes files first);
    /// a file that comes back (an editor's save renames it away first) leaves the list.
    private var pendingDeletes: [String: Set<String>] = [:]
    /// Per collection, which round of pending deletes the scheduled check belongs to.
    private var pendingDeleteRound: [String: Int] = [:]
    static let deleteSettleMilliseconds: UInt64 = 500
    /// Per collection, the first seq whose change could not be written here (full disk, a folder
    /// in the way): the last seq is not advanced past it, and the collection is replayed from
    /// there every `applyRetryMilliseconds` until the write succeeds.
    private var failedApplySeq: [String: Int64] = [:]
    static let applyRetryMilliseconds: UInt64 = 2_000
    /// Called after an order file was rewritten (an attached app file follows it).
    var onOrderFileWritten: (String) -> Void = { _ in }
    /// Called when a collection folder should be watched.
    var onCollectionFolder: (String) -> Void = { _ in }
    /// Called when a collection's folder is no longer this collection's (dropped, renamed).
    var onCollectionGone: (String) -> Void = { _ in }
    var log: (String) -> Void = { _ in }

    init(configuration: AgentConfiguration, link: any ServerRequests, clock: any AgentClock, state: AgentState, mirror: MirrorFolder,
         status: AgentStatus) {
        self.configuration = configuration
        self.link = link
        self.clock = clock
        self.state = state
        self.mirror = mirror
        self.status = status
    }

    private func allowed(_ collection: String) -> Bool {
        configuration.collections?.contains(collection) ?? true
    }

    // MARK: - Connection

    /// A fresh login: learn the collections, create the ones the user made as folders, subscribe.
    func connected() {
        subscribed.removeAll()
        subscribing.removeAll()
        creating.removeAll()
        inFlight.removeAll()
        // What the server has now is learned afresh (a collection may have been dropped, or the
        // store restored, while this agent was away).
        collections.removeAll()
        knowsCollections = false
        status.connected = true
        status.server = link.server
        link.send(.collections) { [self] event in
            guard case .ok = event else { return log("COLLECTIONS failed: \(event)") }
            knowsCollections = true
            for folder in mirror.collectionFolders() + mirror.attachedCollections.sorted() where collections[folder] == nil && allowed(folder) {
                // Mirrored here before and gone from the server now: dropped (or renamed, or the
                // access removed) while this agent was away. Making it again would undo the drop.
                if wasMirrored(folder), !state.isRebasing(folder) {
                    collectionDropped(folder, while: "while this agent was away (deleted, renamed, or your access removed)")
                } else {
                    create(folder)
                }
            }
        }
    }

    func disconnected() {
        subscribed.removeAll()
        subscribing.removeAll()
        creating.removeAll()
        inFlight.removeAll()
        // Unanswered MOVEs get no reply now; the replay after the reconnect shows their effect.
        orderDirty.formUnion(movesInFlight.keys)
        movesInFlight.removeAll()
        status.connected = false
        status.changed()
    }

    func handle(_ event: ServerEvent) {
        switch event {
        case .dropped(let name):
            collectionDropped(name)
        case .renamed(let from, let to):
            collectionRenamed(from, to: to)
        case .collection(let name, let role, _):
            // A rogue or tampered server must not name a path outside the mirror.
            guard Names.isValidCollection(name) else { return log("ignoring a collection with an unsafe name from the server: \(ValueJSON.quoted(name))") }
            guard allowed(name) else { return }
            if let role {
                collections[name] = role
                startMirroring(name)
            } else {
                collections[name] = nil
                subscribed.remove(name)
                subscribed.remove(Names.conflictsCollection(of: name))
                log("access to \(name) was removed; its folder is left as it is")
            }
        case .change(let collection, let seq, let id, let remote):
            guard subscribed.contains(collection) || subscribing.contains(collection) else { return }
            guard Names.isValidID(id, in: collection), remote.position.map(PositionKey.isValid) ?? true else {
                status.problems["\(collection)/\(id.prefix(80))"] = "the server sent a change with an unsafe id or position; ignored"
                return log("ignoring a change with an unsafe id or position from the server: \(ValueJSON.quoted(String(id.prefix(200))))")
            }
            replaySeen[collection]?.insert(id)
            if applyRemote(collection, id, remote, seq: seq) {
                if failedApplySeq[collection] == nil, seq > state.lastSeq[collection] ?? 0 { try? state.setLastSeq(seq, collection) }
                status.noteApplied()
                status.noteSynced()
            } else {
                applyFailed(collection, seq: seq)
            }
        default:
            break
        }
    }

    /// Called after each batch of server lines or file events. Order files are rewritten at
    /// most every `orderFileDelayMilliseconds`: sorting a large collection per batch would make
    /// a long sync quadratic.
    func batchEnded() {
        status.changed()
        guard !orderDirty.isEmpty, !orderFlushScheduled else { return }
        orderFlushScheduled = true
        clock.after(Self.orderFileDelayMilliseconds) { [self] in
            orderFlushScheduled = false
            let due = orderDirty
            orderDirty.removeAll()
            for collection in due { writeOrderFile(collection) }
            if !orderDirty.isEmpty { batchEnded() }
        }
    }

    static let orderFileDelayMilliseconds: UInt64 = 30
    private var orderFlushScheduled = false

    private func startMirroring(_ collection: String) {
        let mirroredBefore = (state.lastSeq[collection] ?? 0) > 0 || !(state.records[collection]?.isEmpty ?? true)
        if mirroredBefore, !mirror.hasFolder(collection) { return detach(collection) }
        try? mirror.ensureFolder(mirror.folder(collection))
        onCollectionFolder(collection)
        subscribe(collection)
        if sharesConflicts { subscribe(Names.conflictsCollection(of: collection)) }
    }

    /// Whether the server keeps conflict copies in companion collections (`<c>~conflicts`), so
    /// every mirror receives them; a server that refuses them leaves copies local only.
    private var sharesConflicts = true

    /// The collection a name stands for (itself, or the one whose conflicts companion it is).
    private func baseCollection(_ name: String) -> String {
        Names.collection(ofConflicts: name) ?? name
    }

    /// Hands a conflict copy just written beside a record to the collection's companion, which
    /// sends it to the server and so to every other mirror.
    private func shareConflictCopy(_ collection: String, _ path: String) {
        let name = (path as NSString).lastPathComponent
        guard Names.collection(ofConflicts: collection) == nil, let id = MirrorFolder.conflictCopyID(forFileName: name) else { return }
        reconcile(Names.conflictsCollection(of: collection), id)
    }

    /// The folder of a mirrored collection is gone (deleted, moved away): stop mirroring it here
    /// and say so, like Syncthing with a missing folder marker; never read it as "delete all".
    private func detach(_ collection: String) {
        guard !detached.contains(collection) else { return }
        detached.insert(collection)
        pendingDeletes[collection] = nil
        for name in [collection, Names.conflictsCollection(of: collection)] where subscribed.remove(name) != nil {
            link.send(.unsubscribe(collection: name))
        }
        status.problems["\(collection)/"] =
            "the folder is missing: \(collection) is no longer mirrored here and nothing was deleted; make the folder again to download it afresh"
        log("the folder of \(collection) is missing: stopped mirroring it here; nothing is deleted on the server")
        status.changed()
    }

    /// Whether this mirror has synced the collection before (its state knows a seq or records).
    private func wasMirrored(_ collection: String) -> Bool {
        (state.lastSeq[collection] ?? 0) > 0 || !(state.records[collection]?.isEmpty ?? true)
    }

    /// The collection was deleted on the server: its folder is moved to `.plistsync/dropped/`
    /// (what people typed stays on disk) and what was known of it is forgotten.
    private func collectionDropped(_ name: String, while when: String = "by its admin") {
        guard Names.isValidCollection(name), allowed(name) else { return }
        collections[name] = nil
        detached.remove(name)
        pendingDeletes[name] = nil
        for collection in [name, Names.conflictsCollection(of: name)] {
            subscribed.remove(collection)
            try? state.forget(collection)
        }
        onCollectionGone(name)
        if mirror.attachedCollections.contains(name) {
            status.problems["\(name)/"] = "deleted on the server \(when); the app's file is left as it is"
        } else if let archived = mirror.archive(name) {
            status.problems["\(name)/"] = "deleted on the server \(when); the folder was moved to \(archived)"
        } else {
            status.problems["\(name)/"] = "deleted on the server \(when)"
        }
        log("\(name) was deleted on the server: \(status.problems["\(name)/"] ?? "")")
        status.changed()
    }

    /// The collection has a new name: the folder and everything known follow it, then the
    /// connection starts over so every subscription is made under the new name.
    private func collectionRenamed(_ from: String, to: String) {
        guard Names.isValidCollection(from), Names.isValidCollection(to), allowed(from) else { return }
        onCollectionGone(from)
        // An attached app file stays attached to its collection's old name (files.plist): it is
        // synced as a new collection of that name until it is attached to the new one.
        let attached = mirror.attachedCollections.contains(from)
        let moved = !attached && (!mirror.hasFolder(from) || mirror.renameCollection(from, to: to))
        if moved {
            try? state.rename(from, to: to)
            try? state.rename(Names.conflictsCollection(of: from), to: Names.conflictsCollection(of: to))
            log("\(from) was renamed \(to) on the server; the folder follows")
        } else {
            // The old name's folder (or attached file) stays here and is synced as a new
            // collection of that name; the renamed one is downloaded afresh.
            try? state.forget(from)
            try? state.forget(Names.conflictsCollection(of: from))
            status.problems["\(from)/"] = attached
                ? "renamed \(to) on the server; the app file attached to \(from) is synced as a new collection \(from) until it is attached to \(to) (plistsync attach, then restart the agent)"
                : "renamed \(to) on the server, but a folder \(to) is already here: the folder \(from) is left as it is and is synced as a new collection \(from)"
            log("\(from) was renamed \(to) on the server: \(status.problems["\(from)/"] ?? "")")
        }
        collections[from] = nil
        link.restart()
    }

    /// The folder of a detached collection is back: forget what was known and download it all.
    private func reattach(_ collection: String) {
        guard detached.remove(collection) != nil else { return }
        try? state.forget(collection)
        try? state.forget(Names.conflictsCollection(of: collection))
        orderBase[collection] = nil
        status.problems["\(collection)/"] = nil
        log("the folder of \(collection) is back: downloading it afresh")
        if collections[collection] != nil { startMirroring(collection) } else { create(collection) }
    }

    /// A folder the user made becomes a collection.
    func create(_ collection: String) {
        if detached.contains(collection) { return reattach(collection) }
        guard link.isReady, knowsCollections, allowed(collection), collections[collection] == nil, !creating.contains(collection) else { return }
        creating.insert(collection)
        link.send(.create(collection: collection)) { [self] event in
            creating.remove(collection)
            switch event {
            case .ok:
                log("created collection \(collection) from its folder")
                collections[collection] = .admin
                startMirroring(collection)
            case .error(_, let code, let message, _):
                log("cannot create collection \(collection): \(code) \(message)")
                status.problems["\(collection)/"] = "\(code) \(message)"
            default:
                break
            }
        }
    }

    private func subscribe(_ collection: String) {
        guard link.isReady, !subscribed.contains(collection), !subscribing.contains(collection) else { return }
        subscribing.insert(collection)
        let since = state.lastSeq[collection] ?? 0
        if since == 0 { replaySeen[collection] = [] }
        let isCompanion = Names.collection(ofConflicts: collection) != nil
        // At start the order file is compared with the synced order: an edit made while the
        // agent was stopped is read after the replay, like any other.
        if !isCompanion, orderBase[collection] == nil {
            orderBase[collection] = OrderBase(hash: state.orderHash[collection], ids: currentOrder(collection))
        }
        link.send(.subscribe(collection: collection, since: since)) { [self] event in
            subscribing.remove(collection)
            switch event {
            case .ok(_, let words, _):
                subscribed.insert(collection)
                if failedApplySeq[collection] == nil, words.count >= 3, let seq = Int64(words[2]), seq > state.lastSeq[collection] ?? 0 {
                    try? state.setLastSeq(seq, collection)
                }
                if let seen = replaySeen.removeValue(forKey: collection) { forgetRecords(in: collection, except: seen) }
                status.noteSynced()
                scan(collection)
                readOrderEdits(collection)
                orderDirty.insert(collection)
                batchEnded()
            case .error(_, .expired, _, _):
                log("\(collection): changes since \(since) are no longer kept; resyncing in full")
                try? state.setLastSeq(0, collection)
                subscribe(collection)
            case .error(_, .badRequest, _, _) where isCompanion:
                sharesConflicts = false
                log("the server does not keep conflict copies (\(collection)); they stay on the machine that made them")
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
    private func forgetRecords(in collection: String, except seen: Set<String>) {
        if state.isRebasing(collection) {
            for id in (state.records[collection] ?? [:]).keys where !seen.contains(id) { try? state.set(nil, collection, id) }
            try? state.endRebase(collection)
            return
        }
        for (id, entry) in state.records[collection] ?? [:] where !seen.contains(id) {
            let path = mirror.recordPath(collection, id)
            if entry.isLive, let bytes = mirror.read(path), ContentHash.of(bytes) == entry.fileHash {
                mirror.keepVersion(collection, id)
                // A save landing meanwhile stays, and goes up as a new record.
                try? mirror.remove(path, guard: .init(expectedHash: entry.fileHash))
            }
            try? state.set(nil, collection, id)
        }
    }

    // MARK: - Local side

    /// Reconciles every file and every known record of a collection.
    func scan(_ collection: String) {
        guard subscribed.contains(collection) else { return }
        // A vanished folder is not read as "delete everything".
        guard mirror.hasFolder(collection) else { return detach(baseCollection(collection)) }
        status.problems["\(baseCollection(collection))/"] = nil
        status.rechecked(collection)
        let ids = Set(mirror.recordIDs(in: collection)).union(state.records[collection]?.keys ?? [:].keys)
        for id in ids.sorted() { reconcile(collection, id) }
    }

    /// Reconciles all subscribed collections (the periodic backstop and event-overflow path).
    func scanAll() {
        for folder in mirror.collectionFolders() + mirror.attachedCollections.sorted()
        where knowsCollections && (collections[folder] == nil || detached.contains(folder)) {
            create(folder)
        }
        for collection in subscribed { scan(collection) }
    }

    /// A file event for one record (nil id: rescan the collection).
    func fileChanged(_ collection: String, _ id: String?) {
        guard let id else { return scan(collection) }
        reconcile(collection, id)
    }

    static let symbolicLinkProblem = "a symbolic link: links are not followed; replace it with a file to sync it"

    /// Compares one record's file with the last synced state and pushes the difference (what
    /// to do is `LocalChange`'s to decide).
    func reconcile(_ collection: String, _ id: String) {
        let key = RecordKey(collection: collection, id: id)
        let path = mirror.recordPath(collection, id)
        let file: LocalFile
        switch mirror.kind(at: path) {
        case .missing: file = .missing
        case .link: file = .link
        case .other: file = .notAFile
        case .file: file = mirror.read(path).map(LocalFile.file) ?? .missing
        }
        // The file is back (an editor's save renames it away, then writes it anew): not a delete.
        if file != .missing, pendingDeletes[collection]?.remove(id) != nil, pendingDeletes[collection]?.isEmpty == true {
            pendingDeletes[collection] = nil
        }
        guard subscribed.contains(collection), !inFlight.contains(key), !retrying.contains(key) else { return }
        if file != .link, status.problems[key.description] == Self.symbolicLinkProblem { status.problems[key.description] = nil }
        if file.bytes != nil, refused[key] == Self.refusedDelete { refused[key] = nil }
        let change = LocalChange.decide(
            collection: collection, id: id, file: file, synced: state.entry(collection, id),
            refusedHashes: Set([refused[key], unwritten[key]].compactMap { $0 }), deleteRefused: refused[key] == Self.refusedDelete,
            maxRecordBytes: link.maxRecordBytes, maxLineBytes: link.maxLineBytes)
        if case .unparseable = change {} else if file.bytes != nil || file == .missing { status.unparseable[key.description] = nil }
        switch change {
        case .symbolicLink:
            // Never followed (it could point anywhere on the machine), pushed or deleted.
            if status.problems[key.description] == nil { log("not syncing \(collection)/\(id).plist: it is a symbolic link") }
            status.problems[key.description] = Self.symbolicLinkProblem
            status.changed()
        case .notAFile:
            status.problems[key.description] = "a folder or special file stands where this record's file belongs; not synced"
            status.changed()
        case .missing(let deletable):
            if deletable { deleteWhenSettled(key) }
        case .unchanged:
            break
        case .unparseable(let reason):
            // Half-written or broken: never pushed; looked at again when the file changes.
            if status.unparseable[key.description] == nil { log("not pushing \(collection)/\(id).plist: \(reason)") }
            status.unparseable[key.description] = reason
            status.changed()
        case .adopt(let hash, let format):
            guard var entry = state.entry(collection, id) else { break }
            entry.fileHash = hash
            entry.format = format
            try? state.set(entry, collection, id)
        case .tooLarge(let size):
            let hash = file.bytes.map(ContentHash.of)
            if refused[key] != hash { log("not pushing \(collection)/\(id).plist: \(size) bytes, over the server's limit") }
            status.problems[key.description] = "too large: \(size) bytes of fields; the server takes at most \(link.maxRecordBytes)"
            refused[key] = hash
            status.changed()
        case .push(let command, let hash, let json, let format):
            push(key, command, hash: hash, fieldsJSON: json, format: format)
        }
    }

    /// A change could not be written: keep the last seq before it and replay from there soon.
    private func applyFailed(_ collection: String, seq: Int64) {
        let first = failedApplySeq[collection] == nil
        failedApplySeq[collection] = min(failedApplySeq[collection] ?? seq, seq)
        if (state.lastSeq[collection] ?? 0) >= seq { try? state.setLastSeq(seq - 1, collection) }
        guard first else { return }
        clock.after(Self.applyRetryMilliseconds) { [self] in
            guard failedApplySeq.removeValue(forKey: collection) != nil, subscribed.contains(collection) else { return }
            subscribed.remove(collection)
            subscribe(collection)
        }
    }

    /// The synced state of a record whose file is gone, when that is a delete to push: it was
    /// live, had a file here, and the server has not refused this delete already.
    private func deletableEntry(_ key: RecordKey) -> AgentState.Entry? {
        guard let entry = state.entry(key.collection, key.id), entry.isLive, entry.fileHash != nil, refused[key] != Self.refusedDelete
        else { return nil }
        return entry
    }

    /// Waits a moment before a missing file becomes a DEL: when its whole folder is going away,
    /// the folder is gone by then and the collection is detached instead.
    private func deleteWhenSettled(_ key: RecordKey) {
        let first = pendingDeletes[key.collection]?.isEmpty ?? true
        pendingDeletes[key.collection, default: []].insert(key.id)
        guard first else { return }
        // A timer from an earlier round whose files all came back must not act on this one.
        pendingDeleteRound[key.collection, default: 0] += 1
        let round = pendingDeleteRound[key.collection]
        clock.after(Self.deleteSettleMilliseconds) { [self] in
            guard pendingDeleteRound[key.collection] == round, let ids = pendingDeletes.removeValue(forKey: key.collection) else { return }
            guard mirror.hasFolder(key.collection) else { return detach(baseCollection(key.collection)) }
            let ready = stillDeleted(key.collection, ids)
            guard !ready.isEmpty else { return }
            if heldDeletes[key.collection] != nil || isMassDelete(key.collection, adding: ready.count) {
                hold(key.collection, ready)
            } else {
                pushDeletes(key.collection, ready)
            }
            batchEnded()
        }
    }

    /// The ids (of `ids`) whose files are still missing and whose deletes can be pushed now.
    private func stillDeleted(_ collection: String, _ ids: Set<String>) -> [String] {
        ids.sorted().filter { id in
            let key = RecordKey(collection: collection, id: id)
            let path = mirror.recordPath(collection, id)
            return subscribed.contains(collection) && !inFlight.contains(key) && !retrying.contains(key) && mirror.kind(at: path) == .missing
                && mirror.read(path) == nil && deletableEntry(key) != nil
        }
    }

    private func pushDeletes(_ collection: String, _ ids: [String]) {
        recentDeletes[collection, default: []].append(contentsOf: Array(repeating: clock.now, count: ids.count))
        for id in ids {
            let key = RecordKey(collection: collection, id: id)
            guard let entry = deletableEntry(key) else { continue }
            push(key, .delete(collection: collection, id: id, baseRev: entry.rev), hash: nil, fieldsJSON: nil, format: entry.format)
        }
    }

    // MARK: - Mass deletes

    /// Per collection, when each recent delete was pushed (for the mass-delete window).
    private var recentDeletes: [String: [Date]] = [:]
    /// Deletes held for confirmation, per collection.
    private var heldDeletes: [String: Set<String>] = [:]
    static let heldDeletesCheckMilliseconds: UInt64 = 500

    /// Whether pushing `count` more deletes would pass `confirmDeletesOver` within the window.
    private func isMassDelete(_ collection: String, adding count: Int) -> Bool {
        let limit = configuration.confirmDeletesOver
        guard limit > 0 else { return false }
        let since = clock.now.addingTimeInterval(-configuration.massDeleteWindowSeconds)
        recentDeletes[collection] = recentDeletes[collection]?.filter { $0 > since }
        return (recentDeletes[collection]?.count ?? 0) + count > limit
    }

    /// Holds deletes until a person confirms or undoes them with `plistsync deletes`, which
    /// leaves a request file in `DIR/.plistsync/deletes/` that is looked for every 500 ms.
    private func hold(_ collection: String, _ ids: [String]) {
        let first = heldDeletes[collection] == nil
        heldDeletes[collection, default: []].formUnion(ids)
        let count = heldDeletes[collection]!.count
        status.problems["\(collection)/"] =
            "\(count) files deleted at once are held, not deleted on the server: `plistsync deletes \(collection) --confirm --dir DIR` deletes them, `--undo` brings the files back"
        status.changed()
        if first { log("\(collection): \(count) files deleted at once; holding the deletes until confirmed (plistsync deletes \(collection) --confirm|--undo)") }
        if first { clock.after(Self.heldDeletesCheckMilliseconds) { [self] in checkHeldDeletes(collection) } }
    }

    private func checkHeldDeletes(_ collection: String) {
        guard var held = heldDeletes[collection] else { return }
        // Files that came back (by hand, or a remote edit) are no longer deletes.
        held = held.filter { mirror.kind(at: mirror.recordPath(collection, $0)) == .missing }
        heldDeletes[collection] = held
        let request = MassDeleteRequest.read(stateFolder: mirror.stateFolder, collection: collection)
        if held.isEmpty || request != nil || !subscribed.contains(collection) {
            MassDeleteRequest.clear(stateFolder: mirror.stateFolder, collection: collection)
            heldDeletes[collection] = nil
            status.problems["\(collection)/"] = nil
            switch request {
            case .confirm?:
                log("\(collection): deleting \(held.count) held files on the server, as confirmed")
                pushDeletes(collection, stillDeleted(collection, held))
            case .undo?:
                log("\(collection): bringing back \(held.count) held deleted files")
                for id in held.sorted() { restoreDeletedFile(collection, id) }
            case nil:
                break
            }
            status.changed()
            return batchEnded()
        }
        clock.after(Self.heldDeletesCheckMilliseconds) { [self] in checkHeldDeletes(collection) }
    }

    /// Writes a record's file again from its last synced state.
    private func restoreDeletedFile(_ collection: String, _ id: String) {
        guard let entry = state.entry(collection, id), let json = entry.fieldsJSON,
            let fields = try? ValueJSON.decodeFields(Array(json.utf8))
        else { return }
        do {
            var restored = entry
            let path = mirror.recordPath(collection, id)
            restored.fileHash = try writeRecord(fields, entry.format, path, guard: .init(expectedHash: nil))
            try? state.set(restored, collection, id)
        } catch {
            log("cannot bring back \(collection)/\(id): \(error)")
        }
    }

    /// Pushes refused for now (a full disk on the server), each tried again after its delay,
    /// which doubles from `firstRetryMilliseconds` up to `lastRetryMilliseconds`.
    private var retrying: Set<RecordKey> = []
    private var retryDelay: [RecordKey: UInt64] = [:]
    static let firstRetryMilliseconds: UInt64 = 1_000
    static let lastRetryMilliseconds: UInt64 = 60_000

    private func retryLater(_ key: RecordKey) {
        let delay = min((retryDelay[key] ?? Self.firstRetryMilliseconds / 2) * 2, Self.lastRetryMilliseconds)
        retryDelay[key] = delay
        retrying.insert(key)
        status.pending = inFlight.count + retrying.count
        clock.after(delay) { [self] in
            retrying.remove(key)
            status.pending = inFlight.count + retrying.count
            reconcile(key.collection, key.id)
            batchEnded()
        }
    }

    private func push(_ key: RecordKey, _ command: Command, hash: String?, fieldsJSON: String?, format: PlistFile.Format) {
        guard link.isReady else { return }
        inFlight.insert(key)
        status.pending = inFlight.count + retrying.count
        link.send(command) { [self] event in
            inFlight.remove(key)
            status.pending = inFlight.count + retrying.count
            switch event {
            case .ok(_, let words, _):
                guard words.count >= 4, let rev = Int64(words[3]) else { break }
                var entry = state.entry(key.collection, key.id)
                    ?? AgentState.Entry(rev: rev, position: nil, fieldsJSON: nil, fileHash: nil, format: format)
                entry.rev = rev
                entry.fieldsJSON = fieldsJSON
                entry.fileHash = hash
                entry.format = format
                if fieldsJSON == nil {
                    // Deleted here: the echo of this change carries nothing new, so the order
                    // file drops the row now.
                    entry.position = nil
                    orderDirty.insert(key.collection)
                }
                try? state.set(entry, key.collection, key.id)
                refused[key] = nil
                retryDelay[key] = nil
                status.problems[key.description] = nil
                status.notePushed()
                status.noteSynced()
            case .error(_, .conflict, _, let current?):
                applyRemote(key.collection, key.id, current, fromConflict: true)
            case .error(_, let code, let message, _) where code.isTemporary:
                log("server refused \(key) for now: \(code) \(message); retrying")
                status.problems[key.description] = "\(code) \(message); retrying"
                retryLater(key)
            case .error(_, let code, let message, _):
                log("server refused \(key): \(code) \(message)")
                status.problems[key.description] = "\(code) \(message)"
                refused[key] = hash ?? Self.refusedDelete
            default:
                break
            }
            // The file may have changed again while the push was in flight, or a merge needs pushing.
            reconcile(key.collection, key.id)
            batchEnded()
        }
    }

    // MARK: - Remote side

    /// Applies a server state to the file and the state (what to do is `RemoteChange`'s to
    /// decide); false when the file could not be written (nothing is recorded then).
    @discardableResult
    private func applyRemote(_ collection: String, _ id: String, _ remote: RemoteState, fromConflict: Bool = false, seq: Int64? = nil) -> Bool {
        let key = RecordKey(collection: collection, id: id)
        let entry = state.entry(collection, id)
        let path = mirror.recordPath(collection, id)
        let bytes = mirror.kind(at: path) == .other ? nil : mirror.read(path)
        let context = RemoteChange.Context(
            fromConflict: fromConflict, seq: seq, rebasing: state.isRebasing(collection), restoredSeq: state.restoredSeq,
            isConflictCopies: Names.collection(ofConflicts: collection) != nil, isShadow: mirror.isShadow(collection),
            fileAge: mirror.fileSystem.modificationDate(path).map { clock.now.timeIntervalSince($0) })
        let (next, action): (SyncedRecord, RemoteChange.Action)
        switch RemoteChange.decide(remote, synced: entry, local: bytes, context: context) {
        case .forget:
            if entry != nil { try? state.set(nil, collection, id) }
            return true
        case .rebase(let rebased):
            try? state.set(rebased, collection, id)
            orderDirty.insert(collection)
            return true
        case .nothingNew(let moved):
            unwritten[key] = nil
            if let moved {
                try? state.set(moved, collection, id)
                orderDirty.insert(collection)
            }
            return true
        case .waitForSave:
            return false
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
        let fileHash = bytes.map(ContentHash.of)
        // A save made while this change is written wins the race: the change is then not
        // recorded, and the save goes up against the old revision, to be merged (CONFLICT).
        let writeGuard = MirrorFolder.WriteGuard(expectedHash: fileHash) { [self] in
            try? state.set(entry, collection, id)
            log("\(collection)/\(id): saved here while a change from the server was being written; merging the two")
            clock.after(0) { [self] in reconcile(collection, id) }
        }
        var applied = next
        do {
            switch action {
            case .take(let fields, let keepFile):
                if keepFile { mirror.keepVersion(collection, id) }
                applied.fileHash = try writeRecord(fields, next.format, path, guard: writeGuard)
            case .remove:
                mirror.keepVersion(collection, id)
                try mirror.remove(path, guard: writeGuard)
            case .bothDeleted:
                break
            case .merge(let local, let remoteFields):
                // The merge may drop what the file held (a field the other side removed): the
                // file is kept first, like any file a remote change replaces.
                mirror.keepVersion(collection, id)
                try merge(collection, id, local: local, base: entry, remote: remoteFields, format: next.format, path: path, guard: writeGuard)
            case .restore(let fields):
                applied.fileHash = try writeRecord(fields, next.format, path, guard: writeGuard)
                log("\(collection)/\(id): edited on the server after it was deleted here; the record is back")
            case .keepEdit:
                log("\(collection)/\(id): deleted on the server while edited here; keeping the edit")
            }
        } catch MirrorError.superseded {
            return true
        } catch {
            log("cannot write \(path): \(error)")
            status.problems[key.description] = "cannot write: \(error)"
            if let fileHash { unwritten[key] = fileHash }
            return false
        }
        unwritten[key] = nil
        try? state.set(applied, collection, id)
        orderDirty.insert(collection)
        if remote.isLive, context.isConflictCopies { status.noteConflictCopy(path) }
        if status.problems[key.description]?.hasPrefix("cannot") == true { status.problems[key.description] = nil }
        if fromConflict || fileHash != entry?.fileHash { reconcile(collection, id) }
        return true
    }

    /// Marks a delete the server refused, so it is not retried until the file comes back.
    static let refusedDelete = "refused-delete"


    /// Three-way merge of a local edit with a server change, written to the record's file.
    private func merge(_ collection: String, _ id: String, local bytes: [UInt8], base entry: AgentState.Entry?,
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
        if result.hasConflicts {
            let copy = try mirror.writeConflictCopy(PlistFile.encode(.dictionary(localFields), as: localFormat), collection, id, device: configuration.device)
            log("\(collection)/\(id): both sides changed \(result.conflictingKeys.joined(separator: ", ")); the server's value stays, yours is in \(copy)")
            status.noteConflict(copy)
            shareConflictCopy(collection, copy)
        }
        _ = try writeRecord(result.merged, localFormat, path, guard: writeGuard)
    }

    private func writeRecord(_ fields: Fields, _ format: PlistFile.Format, _ path: String, guard writeGuard: MirrorFolder.WriteGuard? = nil) throws -> String {
        let bytes = PlistFile.encode(.dictionary(fields), as: format)
        try mirror.writeAtomically(bytes, to: path, guard: writeGuard)
        return ContentHash.of(bytes)
    }

    // MARK: - Order

    private func currentOrder(_ collection: String) -> [String] {
        (state.records[collection] ?? [:]).filter { $0.value.isLive && $0.value.position != nil }
            .sorted { ($0.value.position!, $0.key) < ($1.value.position!, $1.key) }.map(\.key)
    }

    /// Rewrites the order file from the synced positions, unless the user edited it since the
    /// agent last wrote or read it (that edit is read first, never overwritten) or moves are
    /// still in flight (the positions would show the old order for a moment).
    private func writeOrderFile(_ collection: String) {
        // Offline, an edit could not be turned into MOVEs: it waits for the next subscription.
        guard Names.collection(ofConflicts: collection) == nil, subscribed.contains(collection) else { return }
        // A file that does not parse is left for the person fixing it.
        guard readOrderEdits(collection) != .unreadable else { return }
        guard (movesInFlight[collection] ?? 0) == 0 else { return }
        let order = currentOrder(collection)
        let bytes = PlistFile.encode(.array(order.map(Value.string)), as: .xml)
        let hash = ContentHash.of(bytes)
        guard orderBase[collection]?.hash != hash else { return }
        let path = mirror.orderPath(collection)
        // The file as last written or read here: anything else on disk is an unread edit.
        let expected = orderBase[collection]?.hash
        if mirror.read(path).map(ContentHash.of) != hash {
            do {
                try mirror.writeAtomically(bytes, to: path, guard: .init(expectedHash: expected))
                onOrderFileWritten(collection)
            } catch MirrorError.superseded {
                // Saved by someone just now: read that edit; the file is written after its moves.
                if readOrderEdits(collection) == .rewrite { orderDirty.insert(collection) }
                return
            } catch {
                log("cannot write the order of \(collection): \(error)")
                return retryOrderFile(collection)
            }
        }
        orderBase[collection] = OrderBase(hash: hash, ids: order)
        try? state.setOrderHash(hash, collection)
    }

    /// Writes the order file again later (a full disk): like a change that could not be applied,
    /// it is retried every `applyRetryMilliseconds` until it is written.
    private func retryOrderFile(_ collection: String) {
        guard orderRetries.insert(collection).inserted else { return }
        clock.after(Self.applyRetryMilliseconds) { [self] in
            orderRetries.remove(collection)
            orderDirty.insert(collection)
            batchEnded()
        }
    }

    /// Collections whose order file waits for a retry.
    private var orderRetries: Set<String> = []

    /// The order file as the agent last wrote or read it: what a user's edit started from.
    private struct OrderBase {
        /// Hash of the file's bytes; nil when only the ids are known (the order at start).
        var hash: String?
        var ids: [String]
    }

    private var orderBase: [String: OrderBase] = [:]
    /// MOVEs sent and not yet answered, per collection.
    private var movesInFlight: [String: Int] = [:]

    /// What the order file holds: missing, not an array of ids, or the ids.
    private enum OrderFileContent {
        case missing
        case unreadable
        case ids(hash: String, [String])
    }

    private func readOrderFile(_ collection: String) -> OrderFileContent {
        guard let bytes = mirror.read(mirror.orderPath(collection)) else { return .missing }
        guard case .array(let items)? = try? PlistFile.decode(bytes).0 else { return .unreadable }
        return .ids(hash: ContentHash.of(bytes), items.compactMap { if case .string(let id) = $0 { id } else { nil } })
    }

    /// The order file changed on disk (or may have, e.g. while the agent was stopped): turn the
    /// user's reordering into MOVEs.
    func orderFileChanged(_ collection: String) {
        guard subscribed.contains(collection) else { return }
        readOrderEdits(collection)
    }

    /// Reads the order file when it differs from what the agent last wrote or read, and moves
    /// the rows the user moved. Only those: a row someone else moved meanwhile stays where they
    /// put it, so two people reordering different rows at once both keep their moves.
    /// A file that does not parse is reported and left alone until it changes.
    @discardableResult
    private func readOrderEdits(_ collection: String) -> OrderFileReading {
        guard let base = orderBase[collection], subscribed.contains(collection) else { return .unchanged }
        let problemKey = "\(collection).order.plist"
        let hash: String
        let desired: [String]
        switch readOrderFile(collection) {
        case .missing:
            orderBase[collection]?.hash = nil
            try? state.setOrderHash(nil, collection)
            return base.hash != nil ? .rewrite : .unchanged
        case .unreadable:
            if status.unparseable[problemKey] == nil { log("not reading \(problemKey): not an array of record ids") }
            status.unparseable[problemKey] = "not an array of record ids; the order is not changed until the file is fixed"
            return .unreadable
        case .ids(let found, let ids):
            (hash, desired) = (found, ids)
        }
        status.unparseable[problemKey] = nil
        guard hash != base.hash else { return .unchanged }
        // Rows the server has not placed yet (a create not answered, or answered but its change,
        // which carries the position, not back yet) cannot be moved: the edit is read once
        // they are placed (each placement marks the order for a rewrite, which reads it).
        guard !desired.contains(where: { isAwaitingPlacement(collection, $0) }) else { return .unchanged }
        orderBase[collection] = OrderBase(hash: hash, ids: desired)
        try? state.setOrderHash(hash, collection)
        guard desired != base.ids else { return .rewrite }
        let moves = OrderPlanner.moves(from: base.ids, to: desired, current: currentOrder(collection))
        for (id, placement) in moves {
            guard let entry = state.entry(collection, id), !inFlight.contains(RecordKey(collection: collection, id: id)) else { continue }
            movesInFlight[collection, default: 0] += 1
            link.send(.move(collection: collection, id: id, baseRev: entry.rev, placement: placement)) { [self] event in
                movesInFlight[collection, default: 1] -= 1
                if case .ok(_, let words, _) = event, words.count >= 4, let rev = Int64(words[3]), var moved = state.entry(collection, id) {
                    moved.rev = rev
                    try? state.set(moved, collection, id)
                } else if case .error(_, let code, let message, let conflict) = event {
                    log("cannot move \(collection)/\(id): \(code) \(message)")
                    if let conflict { applyRemote(collection, id, conflict, fromConflict: true) }
                }
                orderDirty.insert(collection)
                batchEnded()
            }
        }
        orderDirty.insert(collection)
        return .rewrite
    }

    /// Whether a row of the mirror is not in the synced order yet though it will be: its file
    /// is there and its create is unanswered, or it is live here without a position.
    private func isAwaitingPlacement(_ collection: String, _ id: String) -> Bool {
        guard let entry = state.entry(collection, id) else { return mirror.read(mirror.recordPath(collection, id)) != nil }
        return entry.isLive && entry.position == nil
    }

    /// What reading the order file found.
    private enum OrderFileReading {
        /// Nothing new (or an edit that waits for its rows' creates).
        case unchanged
        /// An edit was read (or the file was deleted): write it afresh once its moves are in.
        case rewrite
        /// The file does not parse: leave it for the person fixing it.
        case unreadable
    }
}

/// A record's identity across the mirror.
struct RecordKey: Hashable, CustomStringConvertible {
    var collection: String
    var id: String
    var description: String { "\(collection)/\(id)" }
}

/// Pure helpers for turning an edited order into moves.
enum OrderPlanner {
    /// Indices (into `values`) of one longest strictly increasing subsequence.
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var run: [Int] = []
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            run.append(cursor)
            cursor = previous[cursor]
        }
        return run.reversed()
    }

    /// The MOVEs that carry the user's edit of an order file from `base` (the order the file
    /// showed) to `desired` over to `current` (the order now, which may hold other people's
    /// moves). The rows off a longest run that kept its relative order are the user's moves. A
    /// row moved to the top or the bottom goes FIRST or LAST; any other next to its nearest
    /// neighbour in `desired` that nobody else moved (after the one before it, else before the
    /// one after it), so concurrent moves of other rows stay where their movers put them.
    static func moves(from base: [String], to desired: [String], current: [String]) -> [(id: String, placement: Placement)] {
        let baseIndex = Dictionary(base.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let present = Set(current)
        var seen: Set<String> = []
        let wanted = desired.filter { present.contains($0) && seen.insert($0).inserted }
        // A row the base did not have (listed from elsewhere) goes where the user put it.
        let based = wanted.filter { baseIndex[$0] != nil }
        let kept = Set(longestIncreasingRun(based.map { baseIndex[$0]! }).map { based[$0] })
        let known = current.filter { baseIndex[$0] != nil }
        let steady = Set(longestIncreasingRun(known.map { baseIndex[$0]! }).map { known[$0] })
        var anchors = Set(wanted.filter { kept.contains($0) && steady.contains($0) })
        var result: [(id: String, placement: Placement)] = []
        for (offset, id) in wanted.enumerated() where !kept.contains(id) {
            if offset == 0 {
                result.append((id, .first))
            } else if offset == wanted.count - 1 {
                result.append((id, .last))
            } else if let previous = wanted[..<offset].last(where: anchors.contains) {
                result.append((id, .after(previous)))
            } else if let next = wanted[(offset + 1)...].first(where: anchors.contains) {
                result.append((id, .before(next)))
            } else {
                result.append((id, offset == 0 ? .first : .last))
            }
            anchors.insert(id)
        }
        return result
    }
}
