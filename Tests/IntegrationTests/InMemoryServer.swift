import Foundation
import PlistSyncTesting
import SyncCore
import XCTest
@testable import ServerKit

/// The test kit's simulated server (the real `ServerCore` on virtual time, no socket, no file)
/// over a `MemoryStore`, for protocol tests: a request goes straight into a session's input,
/// and its replies are read back as lines while virtual time runs. A transcript replayed here
/// and over TCP checks that the protocol lives in the session, not in the connection or the
/// store; a deadline of seconds passes in microseconds.
final class InMemoryServer {
    let scheduler = Scheduler(seed: 1)
    let simulated: SimulatedServer

    /// `users`: name, password, server admin; `configure` sets what `serve`'s options would.
    init(users: [(name: String, password: String, admin: Bool)], configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        let store = MemoryStore(users: users.map { user in
            StoredUser(name: user.name, passwordHash: PasswordHasher.hash(user.password, iterations: 1000), isAdmin: user.admin)
        })
        var configuration = ServerConfiguration()
        configuration.dataPath = "memory"
        configuration.passwordIterations = PasswordHasher.minimumIterations
        configure(&configuration)
        simulated = try SimulatedServer(scheduler: scheduler, configuration: configuration, store: store)
        // Tombstones are stamped on the server's virtual wall clock, which purges them.
        store.wallClockSeconds = { [unowned simulated] in simulated.wallClockSeconds }
    }

    /// Runs `body` as a turn of the server.
    func turn(_ body: (ServerCore) -> Void) {
        simulated.turn(body)
    }

    func connect() -> BufferClient {
        var session: Session?
        let connection = simulated.connect(open: { core, bytes in session = core.open(ByteSessionTransport(bytes)) })
        return BufferClient(connection: connection, session: session!, scheduler: scheduler)
    }

    /// A client that logged in as `user`.
    func login(_ user: String, _ password: String) throws -> BufferClient {
        let client = connect()
        try client.expect("h HELLO 1", prefix: "h OK HELLO 1 ")
        try client.expect("a AUTH \(user) \(password)", equals: "a OK AUTH \(user)")
        return client
    }
}

/// A line-protocol client of a server in memory: sends request lines into the session and
/// reads its replies, running virtual time while a commit, a login or a deadline is due.
final class BufferClient: TranscriptConnection {
    private let connection: SimulatedConnection
    private let scheduler: Scheduler
    /// The session behind this client (its `perform` can be wrapped to watch its actions).
    private(set) weak var session: Session?

    /// Makes the client look as if it had `bytes` unread (the memory budget counts them).
    func holdUnread(_ bytes: Int) {
        connection.bytes.pendingOutputBytes = bytes
    }

    var isClosed: Bool { connection.bytes.isClosed }

    fileprivate init(connection: SimulatedConnection, session: Session, scheduler: Scheduler) {
        self.connection = connection
        self.session = session
        self.scheduler = scheduler
    }

    /// Lets `seconds` of virtual time pass (commits, logins and timers run meanwhile).
    func turnLoop(for seconds: Double) {
        scheduler.advance(by: UInt64(seconds * 1000))
    }

    /// Runs virtual time until `condition` holds or `seconds` of it pass; whether it held.
    @discardableResult
    func wait(within seconds: Double, until condition: () -> Bool) -> Bool {
        scheduler.run(within: UInt64(seconds * 1000), until: condition)
    }

    func send(_ line: String) throws {
        connection.send(line)
    }

    func send(bytes: [UInt8]) throws {
        connection.send(bytes: bytes)
    }

    func readLine() throws -> String? {
        try readLine(timeout: 10)
    }

    /// The next line, nil once the session closed with nothing more to read (or after
    /// `timeout` seconds of virtual time).
    func readLine(timeout: Double) throws -> String? {
        let bytes = connection.bytes!
        guard scheduler.run(within: UInt64(timeout * 1000), until: { bytes.output.contains(0x0A) || bytes.isClosed }),
              let newline = bytes.output.firstIndex(of: 0x0A) else { return nil }
        let line = String(decoding: bytes.output[..<newline], as: UTF8.self)
        bytes.output.removeFirst(newline + 1)
        return line
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
