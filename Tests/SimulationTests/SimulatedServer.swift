import EventLoop
import Foundation
import PlistSyncTesting
import SQLiteKit
import SQLiteStore
@testable import ServerKit
import SyncCore
import SyncProtocol

/// The real server (`Server`, its sessions, committer and hub, a real SQLite store in a temp
/// folder) with no listener: each simulated connection is a session on an in-memory byte
/// connection. The
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
    /// Writes handed to sessions so far (what the store holds can change only with one, or a
    /// restore).
    fileprivate(set) var writes = 0
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
        let path = DataFolder(path: dataFolder).storePath
        if reader?.path != path { reader = (path, try SQLiteDatabase(path: path)) }
        return try reader!.database.query("SELECT fields FROM records WHERE fields IS NOT NULL") { row in row.text(0) }.compactMap { $0 }
    }

    /// The connection `storedFields` reads with, to the data folder served now.
    private var reader: (path: String, database: SQLiteDatabase)?

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
        writes += 1
        backups += 1
        let target = folder + "-backup-\(backups)"
        try fill(target)
        // Every client is cut off first, so the shutdown finishes at once and lets go of the store.
        for connection in connections.values.sorted(by: { $0.number < $1.number }) { connection.cutOff() }
        loop.runOnce(wait: false)
        server.shutdown()
        for _ in 0..<20 { loop.runOnce(wait: false) }
        server = nil
        dataFolder = target
        server = try Server(configuration: configuration, store: try SQLiteServerStore(folder: DataFolder(path: dataFolder)), loop: loop)
    }

    /// A new client connection; `deliver` gets each batch of lines the server sends it.
    func connect(deliver: @escaping ([[UInt8]]) -> Void) -> ServerConnection {
        connectionCount += 1
        let connection = ServerConnection(server: self, number: connectionCount, loop: loop, deliver: deliver)
        guard let server else {
            // Not serving (a restore failed): the connection is refused.
            connection.drop()
            return connection
        }
        connections[ObjectIdentifier(connection)] = connection
        _ = server.open(connection.transport)
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

/// One client connection of the simulated server: the client end of the test kit's
/// `MemoryByteConnection`, whose server end is the `ByteSessionTransport` a TCP socket gets;
/// lines go to the client in batches, through the simulation's scheduler.
final class ServerConnection {
    /// Which connection of the server this is (flushed in this order).
    let number: Int
    private unowned let server: SimulatedServer
    private let bytes: MemoryByteConnection
    private let deliver: ([[UInt8]]) -> Void
    /// Tags of requests sent and not answered yet.
    private var awaiting: [String] = []
    /// How much of what the server wrote has been looked through for replies.
    private var scanned = 0
    /// Whether the connection is over for the client (it went away, or heard the server close).
    private(set) var isClosed = false

    fileprivate init(server: SimulatedServer, number: Int, loop: EventLoop, deliver: @escaping ([[UInt8]]) -> Void) {
        self.number = number
        self.server = server
        self.deliver = deliver
        bytes = MemoryByteConnection(loop: loop)
    }

    /// The session's end, for the server to open a session on.
    fileprivate var transport: SessionTransport { ByteSessionTransport(bytes) }

    var isWaiting: Bool {
        scanReplies()
        return !awaiting.isEmpty && !isClosed && !bytes.isClosed
    }

    /// The verbs that change what the store holds.
    private static let writes: Set<Substring> = ["PUT", "DEL", "MOVE", "CREATE", "DROP", "RENAME"]

    /// Hands the session one request line (tagged `tag`).
    func send(_ line: String, tag: String) {
        guard !isClosed else { return }
        if let verb = line.split(separator: " ", maxSplits: 2).dropFirst().first, Self.writes.contains(verb) { server.writes += 1 }
        awaiting.append(tag)
        bytes.receive(Array((line + "\n").utf8))
    }

    /// Called when the server ends the connection (the client hears of it).
    var onClosed: () -> Void = {}

    /// The server ends the connection at once (a server stopped for a restore).
    fileprivate func cutOff() {
        drop()
        onClosed()
    }

    /// The client goes away (a crash, a dropped connection): the server's read fails.
    func drop() {
        guard !isClosed else { return }
        isClosed = true
        awaiting.removeAll()
        server.forget(self)
        bytes.hangUp(reset: true)
    }

    /// Hands the client the whole lines the server wrote; then, if the server closed the
    /// connection, tells the client so.
    fileprivate func flush() {
        scanReplies()
        if let end = bytes.output.lastIndex(of: 0x0A) {
            let lines = bytes.output[...end].split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map(Array.init)
            bytes.output.removeFirst(end + 1)
            scanned -= end + 1
            deliver(lines)
        }
        guard bytes.isClosed, !isClosed else { return }
        isClosed = true
        awaiting.removeAll()
        server.forget(self)
        onClosed()
    }

    /// Each tagged reply answers the oldest request waiting (replies keep request order).
    private func scanReplies() {
        let output = bytes.output
        while let newline = output[scanned...].firstIndex(of: 0x0A) {
            if let space = output[scanned..<newline].firstIndex(of: 0x20), output[scanned] != UInt8(ascii: "*") {
                let tag = String(decoding: output[scanned..<space], as: UTF8.self)
                let rest = output[(space + 1)..<newline]
                if rest.starts(with: "OK ".utf8) || rest.starts(with: "ERR ".utf8), awaiting.first == tag { awaiting.removeFirst() }
            }
            scanned = newline + 1
        }
    }
}

/// A simulation that could not go on (the server hung), as opposed to an invariant broken.
struct SimulationFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
