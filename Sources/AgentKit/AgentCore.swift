import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// The agent without its process: the mirror folder, the state file, the sync engine and the
/// attached app files, wired to each other and driven by file events, server events and the
/// clock. `Agent` runs one on a libuv loop with real watchers and a TCP link; the simulation
/// tests run many on a simulated file system, clock and server.
final class AgentCore {
    let configuration: AgentConfiguration
    let clock: any AgentClock
    let mirror: MirrorFolder
    let state: AgentState
    let status: AgentStatus
    /// The host running this core (`Agent`, or a simulated machine), given at init.
    private unowned let host: any AgentHost
    /// Made last in `init`, with this core as their outlet (never nil after `init`).
    private(set) var engine: SyncEngine!
    private var fileMirror: FileMirror!
    /// Record files (an empty id: the collection's order file) due to be looked at, with when.
    private var dueFiles: [RecordKey: UInt64] = [:]
    /// When the next look at due files is armed for.
    private var dueArmedAt: UInt64?
    private var rescanArmed = false
    /// Opens the state in `statePath` (a SQLite file); the attached app files come from
    /// `DIR/.plistsync/files.plist` (`files`).
    init(configuration: AgentConfiguration, files: [AttachedFile], fileSystem: any FileSystem, clock: any AgentClock,
         link: any ServerRequests, host: any AgentHost, statePath: String, persistentStatus: Bool = true) throws {
        self.configuration = configuration
        self.clock = clock
        self.host = host
        mirror = MirrorFolder(root: configuration.directory, fileSystem: fileSystem, now: { [clock] in clock.now })
        try mirror.ensureFolder(mirror.stateFolder)
        mirror.removeStaleTempFiles()
        state = try AgentState(path: statePath)
        status = AgentStatus(clock: clock, configuration: configuration, mirror: mirror, state: state, persistent: persistentStatus)
        let remirrored = try state.noteAttached(Set(files.map(\.collection))) { [mirror] in
            Set(files.map(\.collection).filter { mirror.fileSystem.isFolder(mirror.shadowFolder($0)) })
        }
        for collection in remirrored.sorted() {
            let place = files.first { $0.collection == collection }.map { "the app file \($0.name)" } ?? "the folder \(collection)/"
            host.log("\(collection) is now mirrored through \(place): downloading it afresh and merging it with what is there (what mirrored it before is left as it was)")
        }
        fileMirror = FileMirror(mirror: mirror, files: files, status: status, clock: clock, device: configuration.device, outlet: self)
        engine = SyncEngine(configuration: configuration, link: link, clock: clock, state: state, mirror: mirror, status: status, outlet: self)
    }

    /// Reads what changed while the agent was stopped; the link is started by the host afterwards.
    func start() {
        fileMirror.readAll()
        for collection in state.lastSeq.keys where Names.collection(ofConflicts: collection) == nil && mirror.hasFolder(collection) {
            host.watch(collection)
        }
        mirror.pruneVersions(olderThan: configuration.keepVersionsDays)
        armRescan()
        // Written at once: `plistsync status` run right after starting the agent finds it.
        status.changed()
        status.writeNow()
    }

    /// Saves what waits to be saved (the agent is stopping).
    func stop() {
        fileMirror.flush()
        status.disconnected()
        status.close()
    }

    // MARK: - Server side

    /// The server this mirror talks to has this store id (HELLO), restored from a backup that
    /// ended at `restoredSeq` if it was.
    func serverID(_ id: String, restoredSeq: Int64? = nil) {
        if state.noteServer(id, restoredSeq: restoredSeq, saving: { engine.saveState($0) }) {
            engine.log("the server's store is not the one this folder was synced with (restored from a backup, or another server): reconciling every collection afresh; what this folder synced since goes back up")
        }
    }

    func connected() { engine.connected() }
    func disconnected() { engine.disconnected() }
    func received(_ event: ServerEvent) { engine.handle(event) }

    /// Groups the effects of one batch of server lines or file events: one state transaction,
    /// one file-system sync. Files become durable before the state that describes them.
    func batch(starting: Bool) {
        if starting {
            state.beginBatch()
            mirror.beginWrites()
        } else {
            engine.batchEnded()
            fileMirror.shadowsChanged()
            mirror.endWrites()
            engine.saveState { try state.endBatch() }
            if mirror.batchDepth == 0 { host.batchWritten() }
        }
    }

    // MARK: - Local side

    /// Something changed in the mirror's root folder (nil name: a watcher overflow).
    func rootEvent(_ event: FolderWatcher.Event) {
        switch event {
        case .renamed(let name?), .changed(let name?):
            if let file = fileMirror.file(named: name) {
                // An app saved its whole file: read it (a plain write once it has settled).
                let delay: UInt64 = if case .renamed = event { 0 } else { configuration.debounceMilliseconds }
                clock.after(delay) { [unowned self] in
                    batch(starting: true)
                    fileMirror.read(file)
                    batch(starting: false)
                }
            } else if name.hasSuffix(".order.plist") {
                markDue(RecordKey(collection: String(name.dropLast(12)), id: ""), delay: configuration.debounceMilliseconds)
            } else if let collection = MirrorFolder.collectionName(forEntry: name), mirror.hasFolder(collection) {
                // A new folder, or the folder of a detached collection made again.
                engine.create(collection)
            }
        case .renamed(nil), .changed(nil):
            engine.scanAll()
        case .failed(let reason):
            host.log("watching \(configuration.directory) failed: \(reason)")
        }
    }

    /// Something changed in a collection's folder (nil name: a watcher overflow); false when
    /// the watch failed and should be dropped.
    @discardableResult
    func folderEvent(_ collection: String, _ event: FolderWatcher.Event) -> Bool {
        switch event {
        case .renamed(let name?):
            // An atomic save ends in a rename: push at once (next turn, coalescing a burst).
            if let key = recordKey(collection, name) { markDue(key, delay: 0) }
        case .changed(let name?):
            // A plain write may be one of several: wait briefly for the editor to finish.
            if let key = recordKey(collection, name) { markDue(key, delay: configuration.debounceMilliseconds) }
        case .renamed(nil), .changed(nil):
            engine.scan(collection)
        case .failed(let reason):
            host.log("watching \(collection) failed: \(reason); relying on rescans")
            return false
        }
        return true
    }

    /// The record (or conflict copy, in the collection's conflicts companion) a file name is.
    private func recordKey(_ collection: String, _ name: String) -> RecordKey? {
        if let id = MirrorFolder.recordID(forFileName: name) { return RecordKey(collection: collection, id: id) }
        guard let id = MirrorFolder.conflictCopyID(forFileName: name) else { return nil }
        return RecordKey(collection: Names.conflictsCollection(of: collection), id: id)
    }

    /// Marks a record (or, with an empty id, an order file) due after `delay` ms; later events
    /// for the same file push the deadline back.
    private func markDue(_ key: RecordKey, delay: UInt64) {
        let deadline = clock.milliseconds + delay
        dueFiles[key] = deadline
        // Only an earlier deadline moves the timer (a burst of events must not look at every
        // due file each time); one pushed back is found when the timer fires.
        armDueFiles(at: deadline)
    }

    private func armDueFiles(at next: UInt64) {
        guard dueArmedAt.map({ next < $0 }) ?? true else { return }
        dueArmedAt = next
        let now = clock.milliseconds
        clock.after(next > now ? next - now : 0) { [unowned self] in
            guard dueArmedAt == next else { return }
            dueArmedAt = nil
            let now = clock.milliseconds
            let ready = dueFiles.filter { $0.value <= now }.keys
            for key in ready { dueFiles[key] = nil }
            batch(starting: true)
            for key in ready.sorted(by: { ($0.collection, $0.id) < ($1.collection, $1.id) }) {
                if key.id.string.isEmpty { engine.orderFileChanged(key.collection) } else { engine.fileChanged(key.collection, key.id) }
            }
            batch(starting: false)
            if let later = dueFiles.values.min() { armDueFiles(at: later) }
        }
    }

    /// The periodic full rescan, the backstop for missed events.
    private func armRescan() {
        guard !rescanArmed else { return }
        rescanArmed = true
        clock.after(configuration.rescanSeconds * 1000) { [unowned self] in
            rescanArmed = false
            batch(starting: true)
            engine.scanAll()
            batch(starting: false)
            armRescan()
        }
    }
}

extension AgentCore: EngineOutlet, FileMirrorOutlet {
    func engine(_ notice: EngineNotice) {
        switch notice {
        case .watchFolder(let collection): host.watch(collection)
        case .folderGone(let collection): host.unwatch(collection)
        case .orderFileWritten(let collection): fileMirror.shadowsChanged(collection)
        }
    }

    func isFileEventPending(_ key: RecordKey) -> Bool {
        dueFiles[key] != nil
    }

    func shadowChanged(_ collection: String, _ id: RecordID?) {
        if let id { engine.fileChanged(collection, id) } else { engine.orderFileChanged(collection) }
    }

    func log(_ line: String) {
        host.log(line)
    }
}

/// What runs an `AgentCore`: owns the folder watchers and the log, and hears when a batch is
/// written. Given to the core at init.
protocol AgentHost: AnyObject {
    /// Watch a collection's folder (events go to `AgentCore.folderEvent`).
    func watch(_ collection: String)
    func unwatch(_ collection: String)
    /// A batch was written (its files in place, its state committed).
    func batchWritten()
    func log(_ line: String)
}
