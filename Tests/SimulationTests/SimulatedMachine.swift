import EventLoop
import Foundation
import PlistSyncTesting
@testable import AgentKit
import SyncCore
import SyncProtocol

/// One machine of the simulation: a folder on the simulated file system mirrored by a real
/// `AgentCore` (the sync engine, the state in a real SQLite file), whose clock is the
/// scheduler's and whose server link goes through the scheduler to the simulated server. It can
/// crash (everything in memory is lost, files and state stay) and start again.
final class SimulatedMachine {
    let name: String
    let root: String
    private let statePath: String
    private let world: SimulationWorld
    private(set) var core: AgentCore?
    private var clock: SimulatedClock?
    private(set) var link: SimulatedLink?
    /// Collection folders the agent watches: folder path → collection.
    private var watched: [String: String] = [:]
    /// File events waiting to reach the agent, in order.
    private var lastEventTime: UInt64 = 0
    /// The agent's log, newest last (kept short).
    private(set) var log: [String] = []

    /// The device name in conflict copies (machines may share one: the default is the host name).
    let device: String

    /// The app files this machine's agent mirrors (`plistsync attach`).
    var attachedFiles: [AttachedFile] = []

    /// Seconds this machine's wall clock is off (clock jumps); its monotonic clock is not.
    var clockOffset: TimeInterval = 0
    /// Until this virtual time, every message to or from the server is slow.
    var slowUntil: UInt64 = 0
    /// Until this virtual time, the network between this machine and the server is cut:
    /// nothing gets through (TCP delivers it once healed) and new connections fail.
    var partitionedUntil: UInt64 = 0

    init(name: String, device: String, world: SimulationWorld, stateFolder: String) {
        self.name = name
        self.device = device
        root = "/" + name
        statePath = stateFolder + "/" + name + ".sqlite"
        self.world = world
    }

    var isRunning: Bool { core != nil }

    func note(_ line: String) {
        log.append("[\(world.scheduler.now) ms] \(line)")
        if log.count > 20_000 { log.removeFirst(log.count - 15_000) }
    }

    func start() throws {
        guard core == nil else { return }
        try world.fileSystem.makeFolder(root)
        let clock = SimulatedClock(scheduler: world.scheduler) { [weak self] in self?.clockOffset ?? 0 }
        var configuration = AgentConfiguration(
            server: SocketAddress(host: "127.0.0.1", port: 7420), user: "alice", credential: .password("pw"), directory: root, device: device)
        configuration.debounceMilliseconds = 15
        let link = SimulatedLink(machine: self, world: world, clock: clock)
        let core = try AgentCore(configuration: configuration, files: attachedFiles, fileSystem: world.fileSystem, clock: clock, link: link,
                                 host: self, statePath: statePath)
        self.clock = clock
        self.link = link
        self.core = core
        note("started")
        core.start()
        link.connect()
    }

    /// kill -9: the process and its connection are gone; its files and state file stay.
    func crash() {
        guard core != nil else { return }
        note("crashed")
        clock?.isAlive = false
        link?.kill()
        watched.removeAll()
        core = nil
        clock = nil
        link = nil
    }

    /// A file changed in the simulated file system: the agent hears of it shortly, if it
    /// watches that folder (inotify: the root and each collection folder).
    func fileChanged(folder: String, name: String, renamed: Bool) {
        guard let core, folder == root || watched[folder] != nil else { return }
        let event: FolderWatcher.Event = renamed ? .renamed(name) : .changed(name)
        let time = max(world.scheduler.now + UInt64.random(in: 0...2, using: &world.scheduler.random), lastEventTime)
        lastEventTime = time
        let collection = watched[folder]
        world.scheduler.after(time - world.scheduler.now) { [weak self, weak core] in
            guard let self, let core, self.core === core else { return }
            if folder == root { core.rootEvent(event) } else if let collection, watched[folder] == collection { core.folderEvent(collection, event) }
        }
    }
}

extension SimulatedMachine: AgentHost {
    func watch(_ collection: String) {
        guard let core else { return }
        watched[core.mirror.folder(collection)] = collection
    }

    func unwatch(_ collection: String) {
        guard let core else { return }
        watched[core.mirror.folder(collection)] = nil
    }

    func batchWritten() {}

    func log(_ line: String) {
        note(line)
    }
}

/// The agent's server link in the simulation: requests reach the server after a delay (in
/// order), the server's lines come back after a delay (in order), and the connection can drop,
/// at once or leaving what was on its way to reach the server later (after what the agent sends
/// on its next connection; the answers are lost).
final class SimulatedLink: ServerRequests {
    private unowned let machine: SimulatedMachine
    private let world: SimulationWorld
    private let clock: SimulatedClock
    private var connection: SimulatedConnection?
    private var replies: [String: (ServerEvent) -> Void] = [:]
    private var tagCounter = 0
    private var lastUp: UInt64 = 0
    private var lastDown: UInt64 = 0
    /// Connections dropped on the agent's side whose requests still reach the server, and the
    /// time the last of those arrives (they keep their order).
    private var lingering: Set<ObjectIdentifier> = []
    private var lastLingering: UInt64 = 0
    /// Most milliseconds a request on a dropped connection may reach the server after it would have.
    static let lingerMilliseconds: UInt64 = 2_000
    private(set) var isReady = false
    private var dead = false
    let server = SocketAddress(host: "127.0.0.1", port: 7420)
    /// The last change lines that reached the agent on this connection (for `repeatOldChanges`).
    private var recentChanges: [[UInt8]] = []
    private(set) var maxRecordBytes = Limits.standard.maxRecordBytes
    private(set) var maxLineBytes = Limits.standard.maxLineBytes

    init(machine: SimulatedMachine, world: SimulationWorld, clock: SimulatedClock) {
        self.machine = machine
        self.world = world
        self.clock = clock
    }

    /// When a message sent now arrives, after the last one sent the same way (`last`): a
    /// delay, longer while the network is slow, and not before a partition heals.
    private func arrival(after last: UInt64) -> UInt64 {
        var delay = UInt64.random(in: 0...world.maxLatency, using: &world.scheduler.random)
        if world.scheduler.now < machine.slowUntil { delay += UInt64.random(in: 50...1_500, using: &world.scheduler.random) }
        return max(world.scheduler.now + delay, last, machine.partitionedUntil)
    }

    func connect() {
        guard !dead, connection == nil else { return }
        guard world.scheduler.now >= machine.partitionedUntil else {
            machine.note("cannot reach the server")
            return reconnectLater()
        }
        weak var made: SimulatedConnection?
        let connection = world.server.connect { [weak self] lines in
            guard let self, let made else { return }
            arrive(lines, on: made)
        }
        made = connection
        self.connection = connection
        // The server closing the connection reaches the agent after what it sent before.
        connection.onClosed = { [weak self, weak connection] in
            guard let self, let connection else { return }
            let time = arrival(after: lastDown)
            lastDown = time
            world.scheduler.after(time - world.scheduler.now) { [weak self] in
                guard let self, self.connection === connection else { return }
                machine.note("the server closed the connection")
                lost()
            }
        }
        if connection.isClosed { return connection.onClosed() }
        (lastUp, lastDown) = (world.scheduler.now, world.scheduler.now)
        request(.hello(version: "1", clientName: "simulated-agent"), connection) { [weak self] event in
            // HELLO names the store: a restored one has a new id.
            guard case .ok(_, .hello(_, let serverID), let limits) = event else { return }
            let restoredSeq: Int64? = if case .integer(let seq)? = limits?["restored_seq"] { seq } else { nil }
            self?.machine.core?.serverID(serverID, restoredSeq: restoredSeq)
        }
        request(.auth(user: "alice", password: "pw"), connection) { [weak self] event in
            guard let self, case .ok = event else { return }
            isReady = true
            machine.note("connected")
            machine.core?.connected()
        }
    }

    /// Sends one request on `connection`, arriving after a delay (never before an earlier one).
    private func request(_ command: Command, _ connection: SimulatedConnection, reply: @escaping (ServerEvent) -> Void) {
        tagCounter += 1
        let tag = "t\(tagCounter)"
        replies[tag] = reply
        let time = arrival(after: lastUp)
        lastUp = time
        let line = tag + " " + command.requestText
        machine.note("-> " + String(line.prefix(200)))
        world.scheduler.after(time - world.scheduler.now) { [weak self, world] in
            guard let self, !connection.isClosed else { return }
            guard self.connection !== connection else { return connection.send(line) }
            guard lingering.contains(ObjectIdentifier(connection)) else { return }
            let late = max(world.scheduler.now + UInt64.random(in: 1...Self.lingerMilliseconds, using: &world.scheduler.random), lastLingering)
            lastLingering = late
            world.scheduler.after(late - world.scheduler.now) {
                guard !connection.isClosed else { return }
                connection.send(line)
            }
        }
    }

    /// A request reaches the server.
    func send(_ command: Command, reply: @escaping (ServerEvent) -> Void) {
        guard isReady, let connection else { return }
        request(command, connection, reply: reply)
    }

    /// Lines from the server reach the agent after a delay, as one batch (none from a connection
    /// the agent dropped).
    private func arrive(_ lines: [[UInt8]], on connection: SimulatedConnection) {
        guard self.connection === connection else { return }
        let time = arrival(after: lastDown)
        lastDown = time
        world.scheduler.after(time - world.scheduler.now) { [weak self] in
            guard let self, self.connection === connection, let core = machine.core else { return }
            world.arrivals += 1
            world.beforeArrival?(machine, lines)
            core.batch(starting: true)
            for bytes in lines {
                guard self.connection === connection, let line = ServerLine.parseAnsweringTag(bytes) else { continue }
                machine.note("<- " + String(decoding: bytes.prefix(200), as: UTF8.self))
                let event = ServerEvent(line)
                if let tag = line.tag {
                    replies.removeValue(forKey: tag)?(event)
                } else if case .bye(let reason) = event {
                    machine.note("server closed the connection: \(reason)")
                    lost()
                } else {
                    if case .change = event {
                        recentChanges.append(bytes)
                        if recentChanges.count > 20 { recentChanges.removeFirst() }
                    }
                    core.received(event)
                }
            }
            core.batch(starting: false)
        }
    }

    /// A fault no network makes but a server bug could (a replay overlapping live changes, a
    /// broadcast sent twice): one to three change lines this connection already delivered
    /// arrive again, after newer ones. The agent must take them for the old news they are.
    func repeatOldChanges() {
        guard let connection, !recentChanges.isEmpty else { return }
        let count = Int.random(in: 1...min(3, recentChanges.count), using: &world.scheduler.random)
        let lines = (0..<count).map { _ in recentChanges.randomElement(using: &world.scheduler.random)! }
        machine.note("\(count) old change lines are sent again")
        arrive(lines, on: connection)
    }

    func restart() {
        lost()
    }

    /// The connection drops (a network failure): the agent hears of it and reconnects later.
    /// `late`: the requests on their way still reach the server, up to `lingerMilliseconds`
    /// later than they would have; then the server sees the connection close.
    func drop(late: Bool = false) {
        guard let connection else { return }
        machine.note(late ? "connection dropped; what was sent on it arrives late" : "connection dropped")
        guard late else { return lost() }
        lingering.insert(ObjectIdentifier(connection))
        let closing = max(lastUp, world.scheduler.now) + Self.lingerMilliseconds + 1
        world.scheduler.after(closing - world.scheduler.now) { [weak self] in
            connection.drop()
            self?.lingering.remove(ObjectIdentifier(connection))
        }
        lost(closingServerSide: false)
    }

    private func lost(closingServerSide: Bool = true) {
        guard let connection else { return }
        if closingServerSide { connection.drop() }
        self.connection = nil
        recentChanges.removeAll()
        replies.removeAll()
        let wasReady = isReady
        isReady = false
        if wasReady { machine.core?.disconnected() }
        reconnectLater()
    }

    private func reconnectLater() {
        clock.after(UInt64.random(in: 50...1000, using: &world.scheduler.random)) { [weak self] in self?.connect() }
    }

    /// The process died: the connection goes without a word.
    func kill() {
        dead = true
        connection?.drop()
        connection = nil
        replies.removeAll()
        isReady = false
    }
}

extension Command {
    /// PUT, DEL or MOVE.
    var isRecordWrite: Bool {
        switch self {
        case .put, .delete, .move: true
        default: false
        }
    }
}
