import EventLoop
import Foundation
import SQLiteKit
import SyncCore

/// `plistsync agent`: mirrors a directory of plist files through the server. Owns the loop's
/// watchers and timers and wires the link, the state file and the sync engine together.
public final class Agent {
    private let configuration: AgentConfiguration
    private let loop: EventLoop
    private let mirror: MirrorFolder
    private let state: AgentState
    private let link: ServerLink
    private let engine: SyncEngine
    private let status: AgentStatus
    private let fileMirror: FileMirror
    private var rootWatcher: FolderWatcher?
    private var folderWatchers: [String: FolderWatcher] = [:]
    private var dueFiles: [RecordKey: UInt64] = [:]
    private var dueTimer: LoopTimer?
    private var rescanTimer: LoopTimer?
    /// The engine's one-shot timers not yet fired, closed on stop so the loop can end.
    private var engineTimers: [ObjectIdentifier: LoopTimer] = [:]
    private var signals: [SignalWatcher] = []

    /// Opens the state file in `DIR/.plistsync/`; nothing happens until `run()`.
    public init(configuration: AgentConfiguration) throws {
        self.configuration = configuration
        loop = EventLoop()
        mirror = MirrorFolder(root: configuration.directory)
        try mirror.ensureFolder(mirror.stateFolder)
        // One agent a folder: a second one would race the first over every file and the state.
        let lockPath = mirror.stateFolder + "/agent.lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            if lock >= 0 { close(lock) }
            throw AgentError.folderInUse(configuration.directory)
        }
        // Held (never closed) for the life of the process.
        mirror.removeStaleTempFiles()
        state = try AgentState(path: mirror.stateFolder + "/state.sqlite")
        link = ServerLink(loop: loop, configuration: configuration)
        status = AgentStatus(loop: loop, configuration: configuration)
        let files: [AttachedFile]
        do {
            files = try AttachedFiles.load(directory: configuration.directory)
        } catch {
            throw AgentError.badAttachments(error.description)
        }
        let remirrored = try state.noteAttached(Set(files.map(\.collection))) { [mirror] in
            Set(files.map(\.collection).filter { MirrorFolder.kind(at: mirror.shadowFolder($0)) == .other })
        }
        for collection in remirrored.sorted() {
            let place = files.first { $0.collection == collection }.map { "the app file \($0.name)" } ?? "the folder \(collection)/"
            AgentLog.info("\(collection) is now mirrored through \(place): downloading it afresh and merging it with what is there (what mirrored it before is left as it was)")
        }
        fileMirror = FileMirror(mirror: mirror, files: files, status: status)
        engine = SyncEngine(configuration: configuration, link: link, state: state, mirror: mirror, status: status)
    }

    /// Runs until SIGINT or SIGTERM.
    public func run() throws {
        let log: (String) -> Void = { AgentLog.info($0) }
        link.log = log
        engine.log = log
        link.onServerID = { [state, log] id in
            if (try? state.noteServer(id)) == true {
                log("the server's store is not the one this folder was synced with (restored from a backup, or another server): reconciling every collection afresh")
            }
        }
        link.onReady = { [engine] in engine.connected() }
        link.onLost = { [engine] in engine.disconnected() }
        link.onEvent = { [engine] event in engine.handle(event) }
        link.onBatch = { [unowned self] starting in
            if starting { beginBatch() } else { endBatch() }
        }
        engine.onCollectionFolder = { [unowned self] collection in watch(collection) }
        engine.onCollectionGone = { [unowned self] collection in folderWatchers.removeValue(forKey: collection)?.close() }
        fileMirror.onRecord = { [engine] collection, id in engine.fileChanged(collection, id) }
        fileMirror.onOrder = { [engine] collection in engine.orderFileChanged(collection) }
        fileMirror.log = log
        engine.onOrderFileWritten = { [fileMirror] collection in fileMirror.shadowsChanged(collection) }
        engine.schedule = { [unowned self] delay, body in
            let timer = LoopTimer(loop: loop)
            let key = ObjectIdentifier(timer)
            engineTimers[key] = timer
            timer.start(after: delay) { [unowned self] in
                engineTimers.removeValue(forKey: key)?.close()
                body()
            }
        }
        fileMirror.schedule = { [engine] delay, body in engine.schedule(delay, body) }
        fileMirror.readAll()
        status.collectionsProvider = { [state] in
            var result: [String: (seq: Int64, records: Int)] = [:]
            for (name, seq) in state.lastSeq where Names.collection(ofConflicts: name) == nil { result[name] = (seq, state.records[name]?.values.filter(\.isLive).count ?? 0) }
            return result
        }
        status.lastError = { [link] in link.lastError }

        rootWatcher = try FolderWatcher(loop: loop, path: configuration.directory) { [unowned self] event in rootEvent(event) }
        for collection in state.lastSeq.keys where Names.collection(ofConflicts: collection) == nil && mirror.hasFolder(collection) {
            watch(collection)
        }
        let rescan = LoopTimer(loop: loop)
        rescan.start(after: configuration.rescanSeconds * 1000, repeatEvery: configuration.rescanSeconds * 1000) { [unowned self] in
            beginBatch()
            engine.scanAll()
            endBatch()
        }
        rescanTimer = rescan
        for signal in [SignalNumber.interrupt, SignalNumber.terminate] {
            signals.append(SignalWatcher(loop: loop, signal: signal) { [unowned self] in stop() })
        }
        mirror.pruneVersions(olderThan: configuration.keepVersionsDays)
        AgentLog.info("mirroring \(configuration.directory) with \(configuration.server) as \(configuration.user)")
        link.start()
        status.changed()
        loop.run()
        loop.close()
    }

    /// Groups the effects of one batch of server lines or file events: one state transaction,
    /// one file-system sync. Files become durable before the state that describes them.
    private func beginBatch() {
        state.beginBatch()
        mirror.beginWrites()
    }

    private func endBatch() {
        engine.batchEnded()
        fileMirror.shadowsChanged()
        mirror.endWrites()
        state.endBatch()
    }

    private func stop() {
        AgentLog.info("stopping")
        fileMirror.flush()
        link.stop()
        rootWatcher?.close()
        for watcher in folderWatchers.values { watcher.close() }
        folderWatchers.removeAll()
        dueTimer?.close()
        rescanTimer?.close()
        for timer in engineTimers.values { timer.close() }
        engineTimers.removeAll()
        for signal in signals { signal.close() }
        status.connected = false
        status.close()
    }

    private func watch(_ collection: String) {
        guard folderWatchers[collection] == nil else { return }
        do {
            folderWatchers[collection] = try FolderWatcher(loop: loop, path: mirror.folder(collection)) { [unowned self] event in
                folderEvent(collection, event)
            }
        } catch {
            AgentLog.info("cannot watch \(mirror.folder(collection)): \(error); relying on rescans")
        }
    }

    private func rootEvent(_ event: FolderWatcher.Event) {
        switch event {
        case .renamed(let name?), .changed(let name?):
            if let file = fileMirror.file(named: name) {
                // An app saved its whole file: read it (a plain write once it has settled).
                let delay: UInt64 = if case .renamed = event { 0 } else { configuration.debounceMilliseconds }
                engine.schedule(delay) { [unowned self] in
                    beginBatch()
                    fileMirror.read(file)
                    endBatch()
                }
            } else if name.hasSuffix(".order.plist") {
                schedule(RecordKey(collection: String(name.dropLast(12)), id: ""), delay: configuration.debounceMilliseconds)
            } else if let collection = MirrorFolder.collectionName(forEntry: name), mirror.hasFolder(collection) {
                // A new folder, or the folder of a detached collection made again.
                engine.create(collection)
            }
        case .renamed(nil), .changed(nil):
            engine.scanAll()
        case .failed(let reason):
            AgentLog.info("watching \(configuration.directory) failed: \(reason)")
        }
    }

    private func folderEvent(_ collection: String, _ event: FolderWatcher.Event) {
        switch event {
        case .renamed(let name?):
            // An atomic save ends in a rename: push at once (next loop turn, coalescing a burst).
            if let key = recordKey(collection, name) { schedule(key, delay: 0) }
        case .changed(let name?):
            // A plain write may be one of several: wait briefly for the editor to finish.
            if let key = recordKey(collection, name) { schedule(key, delay: configuration.debounceMilliseconds) }
        case .renamed(nil), .changed(nil):
            engine.scan(collection)
        case .failed(let reason):
            AgentLog.info("watching \(collection) failed: \(reason); relying on rescans")
            folderWatchers.removeValue(forKey: collection)?.close()
        }
    }

    /// The record (or conflict copy, in the collection's conflicts companion) a file name is.
    private func recordKey(_ collection: String, _ name: String) -> RecordKey? {
        if let id = MirrorFolder.recordID(forFileName: name) { return RecordKey(collection: collection, id: id) }
        guard let id = MirrorFolder.conflictCopyID(forFileName: name) else { return nil }
        return RecordKey(collection: Names.conflictsCollection(of: collection), id: id)
    }

    /// Marks a record (or, with an empty id, an order file) due after `delay` ms; later events
    /// for the same file push the deadline back.
    private func schedule(_ key: RecordKey, delay: UInt64) {
        dueFiles[key] = loop.nowMilliseconds + delay
        armDueTimer()
    }

    private func armDueTimer() {
        guard let next = dueFiles.values.min() else { return }
        let timer = dueTimer ?? LoopTimer(loop: loop)
        dueTimer = timer
        timer.start(after: next > loop.nowMilliseconds ? next - loop.nowMilliseconds : 0) { [unowned self] in
            let now = loop.nowMilliseconds
            let ready = dueFiles.filter { $0.value <= now }.keys
            for key in ready { dueFiles[key] = nil }
            beginBatch()
            for key in ready.sorted(by: { ($0.collection, $0.id) < ($1.collection, $1.id) }) {
                if key.id.isEmpty { engine.orderFileChanged(key.collection) } else { engine.fileChanged(key.collection, key.id) }
            }
            endBatch()
            armDueTimer()
        }
    }
}

/// Why an agent could not start.
public enum AgentError: Error, CustomStringConvertible {
    /// Another agent holds `DIR/.plistsync/agent.lock`.
    case folderInUse(String)
    /// `DIR/.plistsync/files.plist` cannot be read.
    case badAttachments(String)

    public var description: String {
        switch self {
        case .folderInUse(let directory): "another plistsync agent is already mirroring \(directory)"
        case .badAttachments(let reason): reason
        }
    }
}
