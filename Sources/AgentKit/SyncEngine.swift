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
    let configuration: AgentConfiguration
    let link: any ServerRequests
    let clock: any AgentClock
    let state: AgentState
    let mirror: MirrorFolder
    let status: AgentStatus

    /// Collections the user may read, with their role.
    var collections: [String: Role] = [:]
    /// Whether `collections` holds the answer to this connection's COLLECTIONS (until then a
    /// folder without a collection is not made one).
    var knowsCollections = false
    var subscribed: Set<String> = []
    var subscribing: Set<String> = []
    /// Whether a collection's replay is streaming in (a SUB not yet answered).
    var isReplaying: Bool { !subscribing.isEmpty }
    var creating: Set<String> = []
    /// Ids seen in a full (SINCE 0) replay, to forget records the server no longer has.
    var replaySeen: [String: Set<RecordID>] = [:]
    /// Ids whose files a replay wrote as the server has them: the scan at its end need not read
    /// them again (a save made since sends its own file event).
    var writtenInReplay: [String: Set<RecordID>] = [:]
    var inFlight: Set<RecordKey> = [] { didSet { notePending() } }
    /// Hash of a file the server refused (FORBIDDEN, TOO_LARGE): not retried until it changes.
    var refused: [RecordKey: String] = [:]
    /// Hash of a file a change from the server could not be written over (a full disk): not
    /// pushed (the server would answer CONFLICT with that change, and the same write would fail
    /// in a loop) until it changes or a change for it is applied.
    var unwritten: [RecordKey: String] = [:]
    var orderDirty: Set<String> = []
    /// Collections whose order file holds an edit that moves a row whose own write is still in
    /// flight: read again when that write is answered.
    var orderEditsWaiting: Set<String> = []
    /// Collections whose folder vanished after they were mirrored here: not mirrored (and never
    /// mass-deleted) until the folder is made again, then downloaded afresh.
    var detached: Set<String> = []
    /// Record files found missing, pushed as DEL only after `deleteSettleMilliseconds` if the
    /// file is still gone and its folder still there (`rm -rf` of a folder removes files first);
    /// a file that comes back (an editor's save renames it away first) leaves the list.
    var pendingDeletes: [String: Set<RecordID>] = [:] { didSet { notePending() } }
    /// Per collection, which round of pending deletes the scheduled check belongs to.
    var pendingDeleteRound: [String: Int] = [:]
    static let deleteSettleMilliseconds: UInt64 = 500
    /// Per collection, the first seq whose change could not be written here (full disk, a folder
    /// in the way): the last seq is not advanced past it, and the collection is replayed from
    /// there every `applyRetryMilliseconds` until the write succeeds.
    var failedApplySeq: [String: Int64] = [:]
    /// Per collection, how many changes failed to apply so far, and that count when a retry
    /// replay started (a replay that adds none clears the failure).
    var applyFailures: [String: Int] = [:]
    var retryFromFailures: [String: Int] = [:]
    static let applyRetryMilliseconds: UInt64 = 2_000
    /// Called after an order file was rewritten (an attached app file follows it).
    var onOrderFileWritten: (String) -> Void = { _ in }
    /// Called when a collection folder should be watched.
    var onCollectionFolder: (String) -> Void = { _ in }
    /// Called when a collection's folder is no longer this collection's (dropped, renamed).
    var onCollectionGone: (String) -> Void = { _ in }
    /// Whether a file event for the record is waiting to be handled (its file is looked at then,
    /// so a scan need not read it now).
    var fileEventPending: (RecordKey) -> Bool = { _ in false }
    var log: (String) -> Void = { _ in }

    /// Whether the server keeps conflict copies in companion collections (`<c>~conflicts`), so
    /// every mirror receives them; a server that refuses them leaves copies local only.
    var sharesConflicts = true
    /// Per collection, when each recent delete was pushed (for the mass-delete window).
    var recentDeletes: [String: [Double]] = [:]
    /// Deletes held for confirmation, per collection.
    var heldDeletes: [String: Set<RecordID>] = [:]
    /// Pushes refused for now (a full disk on the server), each tried again after its delay,
    /// which doubles from `firstRetryMilliseconds` up to `lastRetryMilliseconds`.
    var retrying: Set<RecordKey> = [] { didSet { notePending() } }
    var retryDelay: [RecordKey: UInt64] = [:]
    /// Collections whose order file waits for a retry.
    var orderRetries: Set<String> = []
    var orderBase: [String: OrderBase] = [:]
    /// MOVEs sent and not yet answered, per collection.
    var movesInFlight: [String: Int] = [:]

    init(configuration: AgentConfiguration, link: any ServerRequests, clock: any AgentClock, state: AgentState, mirror: MirrorFolder,
         status: AgentStatus) {
        self.configuration = configuration
        self.link = link
        self.clock = clock
        self.state = state
        self.mirror = mirror
        self.status = status
    }

    func allowed(_ collection: String) -> Bool {
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
                switch CollectionLifecycle.unlisted(wasMirrored: wasMirrored(folder), rebasing: state.isRebasing(folder)) {
                case .droppedWhileAway: collectionDropped(folder, while: "while this agent was away (deleted, renamed, or your access removed)")
                case .create: create(folder)
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
        orderDirty.formUnion(orderEditsWaiting)
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
            replaySeen[collection]?.insert(RecordID(id))
            if applyRemote(collection, RecordID(id), remote, seq: seq) {
                if failedApplySeq[collection] == nil, seq > state.lastSeq[collection] ?? 0 { saveState { try state.setLastSeq(seq, collection) } }
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
        scheduleOrderFiles()
    }

    private func scheduleOrderFiles() {
        guard !orderDirty.isEmpty, !orderFlushScheduled else { return }
        orderFlushScheduled = true
        clock.after(Self.orderFileDelayMilliseconds) { [self] in
            orderFlushScheduled = false
            // Each rewrite lists the collection's folder: while a replay streams in, the order
            // files wait for its end instead of being rewritten every few milliseconds.
            guard !isReplaying else { return scheduleOrderFiles() }
            let due = orderDirty
            orderDirty.removeAll()
            for collection in due { writeOrderFile(collection) }
            if !orderDirty.isEmpty { batchEnded() }
        }
    }

    static let orderFileDelayMilliseconds: UInt64 = 30
    var orderFlushScheduled = false
}
