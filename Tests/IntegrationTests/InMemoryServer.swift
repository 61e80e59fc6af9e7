import EventLoop
import Foundation
import PlistSyncTesting
import SyncCore
import XCTest
@testable import ServerKit

/// A server with no listener whose sessions talk over the test kit's in-memory byte
/// connection: a request goes straight into a session's input, and its replies are read back
/// as lines. The store is a `MemoryStore`: no
/// socket and no file, so a transcript replayed here and over TCP checks that the protocol
/// lives in the session, not in the connection or the store.
final class InMemoryServer {
    let loop = EventLoop()
    private(set) var server: Server!
    /// The once-a-second housekeeping `start` schedules (idle and pre-auth deadlines, the
    /// memory budget, tombstone purges); it also keeps the loop alive between requests, as a
    /// listener does: libuv runs no end-of-turn work (the committer's batches) on a loop with
    /// nothing active.
    private let heartbeat: LoopTimer

    /// `users`: name, password, server admin; `configure` sets what `serve`'s options would.
    init(users: [(name: String, password: String, admin: Bool)], configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        heartbeat = LoopTimer(loop: loop)
        let store = MemoryStore(users: users.map { user in
            StoredUser(name: user.name, passwordHash: PasswordHasher.hash(user.password, iterations: 1000), isAdmin: user.admin)
        })
        var configuration = ServerConfiguration()
        configuration.dataPath = "memory"
        configuration.passwordIterations = PasswordHasher.minimumIterations
        configure(&configuration)
        server = try Server(configuration: configuration, store: store, loop: loop)
        heartbeat.start(after: 1000, repeatEvery: 1000) { [unowned self] in server.housekeep() }
    }

    deinit {
        heartbeat.close()
    }

    func connect() -> BufferClient {
        let connection = MemoryByteConnection(loop: loop)
        let session = server.open(ByteSessionTransport(connection))
        return BufferClient(connection: connection, session: session, loop: loop)
    }

    /// A client that logged in as `user`.
    func login(_ user: String, _ password: String) throws -> BufferClient {
        let client = connect()
        try client.expect("h HELLO 1", prefix: "h OK HELLO 1 ")
        try client.expect("a AUTH \(user) \(password)", equals: "a OK AUTH \(user)")
        return client
    }
}

/// A line-protocol client of a server in memory, on the test kit's `MemoryByteConnection`:
/// sends request lines into the session and reads its replies, turning the loop while a commit
/// or a login is being worked out.
final class BufferClient: TranscriptConnection {
    private let connection: MemoryByteConnection
    private let loop: EventLoop
    /// The session behind this client (its `perform` can be wrapped to watch its actions).
    private(set) weak var session: Session?

    /// Makes the client look as if it had `bytes` unread (the memory budget counts them).
    func holdUnread(_ bytes: Int) {
        connection.pendingOutputBytes = bytes
    }

    var isClosed: Bool { connection.isClosed }

    fileprivate init(connection: MemoryByteConnection, session: Session, loop: EventLoop) {
        self.connection = connection
        self.session = session
        self.loop = loop
    }

    /// Turns the loop for `seconds` (commits and logins finish meanwhile).
    func turnLoop(for seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            loop.runOnce(wait: false)
            usleep(100)
        }
    }

    func send(_ line: String) throws {
        connection.receive(Array((line + "\n").utf8))
    }

    func send(bytes: [UInt8]) throws {
        connection.receive(bytes)
    }

    func readLine() throws -> String? {
        try readLine(timeout: 10)
    }

    /// The next line, nil once the session closed with nothing more to read (or after
    /// `timeout` seconds).
    func readLine(timeout: Double) throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let newline = connection.output.firstIndex(of: 0x0A) {
                let line = String(decoding: connection.output[..<newline], as: UTF8.self)
                connection.output.removeFirst(newline + 1)
                return line
            }
            if connection.isClosed { return nil }
            loop.runOnce(wait: false)
            usleep(100)
        }
        return nil
    }
}

extension TranscriptConnection {
    /// Sends `request` and checks the reply line equals `expected`.
    func expect(_ request: String, equals expected: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try send(request)
        XCTAssertEqual(try self.line(), expected, "reply to \(request)", file: file, line: line)
    }

    /// Sends `request` and checks the reply line starts with `prefix`; returns the line.
    @discardableResult
    func expect(_ request: String, prefix: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try send(request)
        let reply = try self.line()
        XCTAssertTrue(reply.hasPrefix(prefix), "reply to \(request): \(reply)", file: file, line: line)
        return reply
    }

    /// The next line, which must come.
    func line() throws -> String {
        guard let line = try readLine() else { throw LineClient.Failure(description: "connection closed") }
        return line
    }
}
