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

    /// The agent around the engine (`AgentCore`), told what the engine did through `EngineNotice`.
    private unowned let outlet: any EngineOutlet
    let subscriptions = Subscriptions()
    let pushes = PushQueue()
    let settlingDeletes = DeleteSettler()
    let failedApplies = ApplyRetries()
    let order = OrderKeeper()
    let massDeletes = MassDeleteGuard()

    init(configuration: AgentConfiguration, link: any ServerRequests, clock: any AgentClock, state: AgentState, mirror: MirrorFolder,
         status: AgentStatus, outlet: any EngineOutlet) {
        self.configuration = configuration
        self.link = link
        self.clock = clock
        self.state = state
        self.mirror = mirror
        self.status = status
        self.outlet = outlet
    }

    func log(_ line: String) {
        outlet.log(line)
    }

    func tell(_ notice: EngineNotice) {
        outlet.engine(notice)
    }

    /// Whether a file event for the record is waiting to be handled (its file is looked at then,
    /// so a scan need not read it now).
    func fileEventPending(_ key: RecordKey) -> Bool {
        outlet.isFileEventPending(key)
    }

    func allowed(_ collection: String) -> Bool {
        configuration.collections?.contains(collection) ?? true
    }

    // MARK: - Connection

    /// A fresh login: learn the collections, create the ones the user made as folders, subscribe.
    func connected() {
        subscriptions.connectionStarted()
        pushes.connectionLost()
        notePending()
        status.connected(to: link.server)
        link.send(.collections) { [self] event in
            guard case .ok = event else { return log("COLLECTIONS failed: \(event)") }
            subscriptions.collectionsListed()
            for folder in mirror.collectionFolders() + mirror.attachedCollections.sorted() where subscriptions.role(folder) == nil && allowed(folder) {
                switch CollectionLifecycle.unlisted(wasMirrored: wasMirrored(folder), rebasing: state.isRebasing(folder)) {
                case .droppedWhileAway: collectionDropped(folder, while: "while this agent was away (deleted, renamed, or your access removed)")
                case .create: create(folder)
                }
            }
        }
    }

    func disconnected() {
        subscriptions.connectionLost()
        pushes.connectionLost()
        notePending()
        order.connectionLost()
        status.disconnected()
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
                subscriptions.setRole(name, role)
                startMirroring(name)
            } else {
                subscriptions.accessRemoved(name)
                log("access to \(name) was removed; its folder is left as it is")
            }
        case .change(let collection, let seq, let id, let remote):
            guard subscriptions.receives(collection) else { return }
            guard Names.isValidID(id, in: collection), remote.position.map(PositionKey.isValid) ?? true else {
                status.report("the server sent a change with an unsafe id or position; ignored", for: "\(collection)/\(id.prefix(80))")
                return log("ignoring a change with an unsafe id or position from the server: \(ValueJSON.quoted(String(id.prefix(200))))")
            }
            subscriptions.seen(collection, RecordID(id))
            if applyRemote(collection, RecordID(id), remote, seq: seq) {
                if !failedApplies.hasFailed(collection), seq > state.lastSeq[collection] ?? 0 { saveState { try state.setLastSeq(seq, collection) } }
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
        guard order.claimFlush() else { return }
        clock.after(Self.orderFileDelayMilliseconds) { [self] in
            order.flushStarted()
            // Each rewrite lists the collection's folder: while a replay streams in, the order
            // files wait for its end instead of being rewritten every few milliseconds.
            guard !subscriptions.isReplaying else { return scheduleOrderFiles() }
            for collection in order.takeDirty() { writeOrderFile(collection) }
            if order.hasDirty { batchEnded() }
        }
    }

    static let orderFileDelayMilliseconds: UInt64 = 30
}

/// What the engine tells the agent around it.
enum EngineNotice {
    /// A collection's folder is mirrored: watch it.
    case watchFolder(String)
    /// A collection's folder is no longer this collection's (dropped, renamed): stop watching it.
    case folderGone(String)
    /// A collection's order file was rewritten (an attached app file follows it).
    case orderFileWritten(String)
}

/// The agent around a `SyncEngine`, given to it at init.
protocol EngineOutlet: AnyObject {
    func engine(_ notice: EngineNotice)
    /// Whether a file event for the record waits to be handled.
    func isFileEventPending(_ key: RecordKey) -> Bool
    func log(_ line: String)
}
