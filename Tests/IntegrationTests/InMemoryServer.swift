import EventLoop
import Foundation
import PlistSyncTesting
import SyncCore
import XCTest
@testable import ServerKit

/// A server with no listener whose sessions talk over buffers: a request goes straight into a
/// session's input, and its actions are read back as lines. The store is a `MemoryStore`: no
/// socket and no file, so a transcript replayed here and over TCP checks that the protocol
/// lives in the session, not in the connection or the store.
final class InMemoryServer {
    let loop = EventLoop()
    private(set) var server: Server!
    /// Keeps the loop alive between requests, as a listener does when serving: libuv runs no
    /// end-of-turn work (the committer's batches) on a loop with nothing active.
    private let heartbeat: LoopTimer

    /// `users`: name, password, server admin.
    init(users: [(name: String, password: String, admin: Bool)], maxBufferedBytes: Int? = nil) throws {
        heartbeat = LoopTimer(loop: loop)
        heartbeat.start(after: 1000, repeatEvery: 1000) {}
        let store = MemoryStore(users: users.map { user in
            StoredUser(name: user.name, passwordHash: PasswordHasher.hash(user.password, iterations: 1000), isAdmin: user.admin)
        })
        var configuration = ServerConfiguration()
        configuration.dataPath = "memory"
        if let maxBufferedBytes { configuration.maxBufferedBytes = maxBufferedBytes }
        server = try Server(configuration: configuration, store: store, loop: loop)
    }

    deinit {
        heartbeat.close()
    }

    func connect() -> BufferClient {
        let transport = BufferTransport(loop: loop)
        let session = server.open(transport)
        return BufferClient(transport: transport, session: session, loop: loop)
    }
}

/// A session's connection made of two buffers: what the session sent, and whether it closed.
final class BufferTransport: SessionTransport {
    private let loop: EventLoop
    fileprivate weak var session: Session?
    fileprivate var output: [UInt8] = []
    fileprivate private(set) var isClosed = false

    init(loop: EventLoop) {
        self.loop = loop
    }

    var peerHost: String? { "memory" }
    /// Bytes the client has not taken: none unless a test says so (a client that stopped reading).
    var pendingOutputBytes = 0

    func attach(_ session: Session) {
        self.session = session
    }

    func perform(_ action: SessionAction) {
        switch action {
        case .send(let sent): output += Array(sent.text.utf8)
        case .deliver(let delivery): output += delivery.bytes
        case .pauseReading, .resumeReading, .commit, .read, .checkPassword, .checkToken, .announce, .subscribe, .unsubscribe: break
        case .close, .closeNow:
            guard !isClosed else { return }
            isClosed = true
            loop.atEndOfTurn { [weak self] in self?.session?.closed() }
        }
    }
}

/// The client end of a `BufferTransport`: sends request lines into the session and reads its
/// replies, turning the loop while a commit or a login is being worked out.
final class BufferClient: TranscriptConnection {
    private let transport: BufferTransport
    private let loop: EventLoop
    /// The session behind this client (its `perform` can be wrapped to watch its actions).
    private(set) weak var session: Session?

    /// Makes the client look as if it had `bytes` unread (the memory budget counts them).
    func holdUnread(_ bytes: Int) {
        transport.pendingOutputBytes = bytes
    }

    var isClosed: Bool { transport.isClosed }

    fileprivate init(transport: BufferTransport, session: Session, loop: EventLoop) {
        self.transport = transport
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
        transport.session?.received(Array((line + "\n").utf8))
    }

    /// The next line, nil once the session closed with nothing more to read (or after 10 s).
    func readLine() throws -> String? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let newline = transport.output.firstIndex(of: 0x0A) {
                let line = String(decoding: transport.output[..<newline], as: UTF8.self)
                transport.output.removeFirst(newline + 1)
                return line
            }
            if transport.isClosed { return nil }
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
