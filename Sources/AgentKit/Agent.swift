import CShims
import EventLoop
import Foundation
import SyncCore

/// `plistsync agent`: mirrors a directory of plist files through the server. Runs an
/// `AgentCore` on a libuv loop: the real file system, folder watchers, the wall clock, signals,
/// and a TCP `ServerLink`.
public final class Agent {
    private let configuration: AgentConfiguration
    private let loop: EventLoop
    private let clock: LoopClock
    /// Made last in `init`, with this agent as their listener and host (never nil after `init`).
    private var link: ServerLink!
    private var core: AgentCore!
    private var rootWatcher: FolderWatcher?
    private var folderWatchers: [String: FolderWatcher] = [:]
    private var signals: [SignalWatcher] = []
    private let trimTimer: LoopTimer
    /// Rung by `requestStop()` from another thread (never nil after `init`).
    private var stopBell: LoopDoorbell!
    /// `DIR/.plistsync/agent.lock`, held (flock) from `init` until `run()` returns.
    private let lock: Int32
    private let logLine: (String) -> Void

    /// Opens the state file in `DIR/.plistsync/`; nothing happens until `run()`. `log`: where
    /// log lines go (stderr by default; an agent run inside a test keeps its own).
    public init(configuration: AgentConfiguration, log: ((String) -> Void)? = nil) throws {
        self.configuration = configuration
        logLine = log ?? AgentLog.info
        loop = EventLoop()
        clock = LoopClock(loop: loop)
        trimTimer = LoopTimer(loop: loop)
        let fileSystem = PosixFileSystem()
        let stateFolder = configuration.directory + "/.plistsync"
        try fileSystem.makeFolder(stateFolder)
        // One agent a folder: a second one would race the first over every file and the state.
        let lock = open(stateFolder + "/agent.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            if lock >= 0 { close(lock) }
            throw AgentError.folderInUse(configuration.directory)
        }
        self.lock = lock
        let files: [AttachedFile]
        do {
            files = try AttachedFiles.load(directory: configuration.directory)
        } catch {
            close(lock)
            throw AgentError.badAttachments(error.description)
        }
        link = ServerLink(loop: loop, configuration: configuration, listener: self)
        do {
            core = try AgentCore(configuration: configuration, files: files, fileSystem: fileSystem, clock: clock, link: link, host: self,
                                 statePath: stateFolder + "/state.sqlite")
        } catch {
            close(lock)
            throw error
        }
        stopBell = LoopDoorbell(loop: loop) { [unowned self] in stop() }
    }

    /// Runs until SIGINT or SIGTERM (with `stopOnSignals`) or `requestStop()`; the folder's
    /// lock is released when it returns.
    public func run(stopOnSignals: Bool = true) throws {
        defer { close(lock) }
        rootWatcher = try FolderWatcher(loop: loop, path: configuration.directory) { [core] event in core?.rootEvent(event) }
        core.start()
        if stopOnSignals {
            for signal in [SignalNumber.interrupt, SignalNumber.terminate] {
                signals.append(SignalWatcher(loop: loop, signal: signal) { [unowned self] in stop() })
            }
        }
        log("mirroring \(configuration.directory) with \(configuration.server) as \(configuration.user)")
        link.start()
        loop.run()
        loop.close()
    }

    /// Stops a running agent as SIGTERM does; callable from any thread.
    public func requestStop() {
        stopBell.ring()
    }

    private func stop() {
        log("stopping")
        stopBell.close()
        core.stop()
        link.stop()
        rootWatcher?.close()
        for watcher in folderWatchers.values { watcher.close() }
        folderWatchers.removeAll()
        clock.stop()
        trimTimer.close()
        for signal in signals { signal.close() }
    }

    static let trimDelayMilliseconds: UInt64 = 2_000

    /// Watches a collection's folder; a watch left on a folder that was removed (and perhaps
    /// made again) is replaced.
    func watch(_ collection: String) {
        if let current = folderWatchers[collection] {
            if current.watchesTheFolderAtItsPath { return }
            folderWatchers.removeValue(forKey: collection)?.close()
        }
        do {
            folderWatchers[collection] = try FolderWatcher(loop: loop, path: core.mirror.folder(collection)) { [unowned self] event in
                if !core.folderEvent(collection, event) { folderWatchers.removeValue(forKey: collection)?.close() }
            }
        } catch {
            log("cannot watch \(core.mirror.folder(collection)): \(error); relying on rescans")
        }
    }
}

extension Agent: AgentHost, LinkListener {
    func unwatch(_ collection: String) {
        folderWatchers.removeValue(forKey: collection)?.close()
    }

    func batchWritten() {
        // Memory a burst of work freed goes back to the system once the agent is quiet (the
        // allocator keeps freed pages; an idle agent would hold its busiest moment's heap).
        trimTimer.start(after: Self.trimDelayMilliseconds) { plistsync_malloc_trim() }
    }

    func log(_ line: String) {
        logLine(line)
    }

    func link(_ notice: LinkNotice) {
        switch notice {
        case .serverID(let id, let restoredSeq): core.serverID(id, restoredSeq: restoredSeq)
        case .ready: core.connected()
        case .lost: core.disconnected()
        case .event(let event): core.received(event)
        case .batch(let starting): core.batch(starting: starting)
        case .errorChanged: core.status.linkErrorChanged(link.lastError)
        case .log(let line): log(line)
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
