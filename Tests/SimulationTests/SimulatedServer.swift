import EventLoop
import Foundation
import SQLiteKit
import SQLiteStore
@testable import ServerKit
import SyncCore
import SyncProtocol

/// The real server (`Server`, its sessions, committer and hub, a real SQLite store in a temp
/// folder) with no listener: each simulated connection is a session on a buffer. The
/// simulation hands it one request at a time and turns its loop until that request is answered,
/// so what it does is the same on every run of a seed.
final class SimulatedServer {
    let loop = EventLoop()
    let folder: String
    private(set) var server: Server!
    private var connections: [ObjectIdentifier: ServerConnection] = [:]
    private var connectionCount = 0
    /// Keeps the loop alive, as a listener does when serving: libuv runs no end-of-turn work
    /// (the committer's batches) on a loop with nothing active.
    private let heartbeat: LoopTimer

    private let configuration: ServerConfiguration
    /// Backups and restored data folders made so far (`<folder>-backup-N`).
    private var backups = 0
    /// The data folder served now.
    private var dataFolder: String

    init(folder: String, users: [(name: String, password: String)]) throws {
        // Commits run on the loop thread (the same code, no hand-off to libuv's pool): cheaper,
        // and nothing of a run depends on thread timing.
        loop.runsBlockingWorkInline = true
        self.folder = folder
        dataFolder = folder
        heartbeat = LoopTimer(loop: loop)
        heartbeat.start(after: 1_000, repeatEvery: 1_000) {}
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let data = DataFolder(path: folder)
        let store = try SQLiteServerStore(folder: data)
        let accounts = try Accounts(folder: data)
        for user in users {
            _ = try accounts.addUser(user.name, passwordHash: PasswordHasher.hash(user.password, iterations: 1), isAdmin: false)
        }
        var configuration = ServerConfiguration()
        configuration.dataPath = folder
        configuration.idleTimeoutSeconds = 0
        self.configuration = configuration
        server = try Server(configuration: configuration, store: store, loop: loop)
    }

    /// The fields (canonical JSON) of every live record the store holds now, in every
    /// collection, read from its file by a connection of its own: what is committed, whatever
    /// the server is doing (stalled, refusing writes).
    func storedFields() throws -> [String] {
        let database = try SQLiteDatabase(path: DataFolder(path: dataFolder).storePath)
        return try database.query("SELECT fields FROM records WHERE fields IS NOT NULL") { row in row.text(0) }.compactMap { $0 }
    }

    /// `plistsync backup` while serving: the path of a consistent copy of the store.
    func backUp() throws -> String {
        backups += 1
        let file = folder + "-backup-\(backups)"
        try DataFolder(path: dataFolder).backup(to: file)
        return file
    }

    /// Stops the server (every client gets `* BYE SHUTDOWN`), `plistsync restore`s the backup
    /// (a new server id), and serves again.
    func restore(from file: String) throws {
        try serveAgain { target in try DataFolder(path: target).restore(from: file) }
    }

    /// The server process is killed (`kill -9`) and started again on what its disk holds: every
    /// client loses its connection, and the server its memory (subscriptions, paces, caches).
    /// Every answered write was committed (the simulation settles each request), so the data
    /// folder copied as it stands is what a restart finds.
    func crashAndRestart() throws {
        let current = dataFolder
        try serveAgain { target in try FileManager.default.copyItem(atPath: current, toPath: target) }
    }

    /// Cuts every client off, ends the server, makes a new data folder with `fill` and serves it.
    /// A new folder: a process keeps the lock on a data folder it served until it exits.
    private func serveAgain(_ fill: (String) throws -> Void) throws {
        backups += 1
        let target = folder + "-backup-\(backups)"
        try fill(target)
        // Every client is cut off first, so the shutdown finishes at once and lets go of the store.
        for connection in connections.values.sorted(by: { $0.number < $1.number }) { connection.cutOff() }
        server.shutdown()
        for _ in 0..<20 { loop.runOnce(wait: false) }
        server = nil
        dataFolder = target
        server = try Server(configuration: configuration, store: try SQLiteServerStore(folder: DataFolder(path: dataFolder)), loop: loop)
    }

    /// A new client connection; `deliver` gets each batch of lines the server sends it.
    func connect(deliver: @escaping ([[UInt8]]) -> Void) -> ServerConnection {
        connectionCount += 1
        let connection = ServerConnection(server: self, number: connectionCount, deliver: deliver)
        guard let server else {
            // Not serving (a restore failed): the connection is refused.
            connection.drop()
            return connection
        }
        connections[ObjectIdentifier(connection)] = connection
        connection.session = server.open(connection)
        return connection
    }

    fileprivate func forget(_ connection: ServerConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Turns the loop until every connection's requests are answered (logins are checked on
    /// another thread), then hands each connection what it was sent.
    func settle() throws {
        let deadline = Date().addingTimeInterval(10)
        while connections.values.contains(where: \.isWaiting) {
            guard Date() < deadline else { throw SimulationFailure("the server did not answer within 10 s") }
            // Commits run within the turn; only a login waits for its hashing thread: then the
            // loop blocks until that wakes it (the heartbeat bounds the wait).
            loop.runOnce(wait: false)
            if connections.values.contains(where: \.isWaiting) { loop.runOnce(wait: true) }
        }
        loop.runOnce(wait: false)
        for connection in connections.values.sorted(by: { $0.number < $1.number }) { connection.flush() }
    }

    /// Ends every session and the loop; the store is closed with the server.
    func close() {
        for connection in Array(connections.values) { connection.drop() }
        loop.runOnce(wait: false)
        server?.shutdown()
        heartbeat.close()
        for _ in 0..<20 { loop.runOnce(wait: false) }
        server = nil
        loop.close()
        try? FileManager.default.removeItem(atPath: folder)
        for index in 0...backups { try? FileManager.default.removeItem(atPath: folder + "-backup-\(index)") }
    }
}

/// One client connection of the simulated server: the session's side is a `SessionTransport`
/// on buffers; lines go to the client in batches, through the simulation's scheduler.
final class ServerConnection: SessionTransport {
    /// Which connection of the server this is (flushed in this order).
    let number: Int
    private unowned let server: SimulatedServer
    fileprivate weak var session: Session?
    private let deliver: ([[UInt8]]) -> Void
    private var output: [UInt8] = []
    /// Tags of requests sent and not answered yet.
    private var awaiting: [String] = []
    private(set) var isClosed = false

    fileprivate init(server: SimulatedServer, number: Int, deliver: @escaping ([[UInt8]]) -> Void) {
        self.number = number
        self.server = server
        self.deliver = deliver
    }

    var isWaiting: Bool { !awaiting.isEmpty && !isClosed }

    /// Hands the session one request line (tagged `tag`).
    func send(_ line: String, tag: String) {
        guard !isClosed else { return }
        awaiting.append(tag)
        session?.received(Array((line + "\n").utf8))
    }

    /// Called when the server ends the connection (the client hears of it).
    var onClosed: () -> Void = {}

    /// The server ends the connection at once (a server stopped for a restore).
    fileprivate func cutOff() {
        drop()
        onClosed()
    }

    /// The client goes away (a crash, a dropped connection).
    func drop() {
        guard !isClosed else { return }
        isClosed = true
        awaiting.removeAll()
        server.forget(self)
        session?.endOfInput()
        session?.closed()
    }

    fileprivate func flush() {
        guard !output.isEmpty else { return }
        var lines: [[UInt8]] = []
        var start = 0
        for index in output.indices where output[index] == 0x0A {
            lines.append(Array(output[start..<index]))
            start = index + 1
        }
        output.removeFirst(start)
        if !lines.isEmpty { deliver(lines) }
    }

    // MARK: - SessionTransport

    var peerHost: String? { "simulated" }
    var pendingOutputBytes: Int { 0 }

    func attach(_ session: Session) {
        self.session = session
    }

    func perform(_ action: SessionAction) {
        switch action {
        case .send(let output): received(Array(output.text.utf8))
        case .deliver(let delivery): received(Array(delivery.bytes))
        case .pauseReading, .resumeReading, .commit, .read, .checkPassword, .checkToken, .announce, .subscribe, .unsubscribe: break
        case .close, .closeNow:
            guard !isClosed else { return }
            isClosed = true
            awaiting.removeAll()
            server.forget(self)
            server.loop.atEndOfTurn { [weak self] in self?.session?.closed() }
            flush()
            onClosed()
        }
    }

    private func received(_ bytes: [UInt8]) {
        output += bytes
        // Each tagged reply answers the oldest request waiting (replies keep request order).
        var start = output.count - bytes.count
        while let newline = output[start...].firstIndex(of: 0x0A) {
            if let space = output[start..<newline].firstIndex(of: 0x20), output[start] != UInt8(ascii: "*") {
                let tag = String(decoding: output[start..<space], as: UTF8.self)
                let rest = output[(space + 1)..<newline]
                if rest.starts(with: "OK ".utf8) || rest.starts(with: "ERR ".utf8), awaiting.first == tag { awaiting.removeFirst() }
            }
            start = newline + 1
        }
    }
}

/// A simulation that could not go on (the server hung), as opposed to an invariant broken.
struct SimulationFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
