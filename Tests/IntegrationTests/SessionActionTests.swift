import Foundation
import XCTest
@testable import ServerKit
import SyncCore

/// The session as a state machine: requests in, actions out. Each test watches the actions a
/// session on buffers decides on (`Session.emit`), holding a commit back where the order of
/// replies depends on it.
final class SessionActionTests: XCTestCase {
    private var memory: InMemoryServer!
    private var client: BufferClient!
    private var actions: [String] = []
    /// Commits held back by the test, with what carries them out.
    private var heldCommits: [() -> Void] = []
    private var holdCommits = false
    /// Store reads held back by the test, with what carries them out.
    private var heldReads: [() -> Void] = []
    private var holdReads = false

    override func setUpWithError() throws {
        memory = try InMemoryServer(users: [(name: "alice", password: "pw", admin: false)])
        client = memory.connect()
        let session = try XCTUnwrap(client.session)
        let carryOut = session.emit
        session.emit = { [unowned self] action in
            actions.append(Self.describe(action))
            if case .commit = action, holdCommits {
                heldCommits.append { carryOut(action) }
            } else if case .read = action, holdReads {
                heldReads.append { carryOut(action) }
            } else {
                carryOut(action)
            }
        }
        try client.send("h HELLO 1")
        try client.send("a AUTH alice pw")
        try client.send("c CREATE notes")
        XCTAssertTrue(try client.readLine()?.hasPrefix("h OK HELLO 1 ") ?? false)
        XCTAssertEqual(try client.readLine(), "a OK AUTH alice")
        XCTAssertEqual(try client.readLine(), "c OK CREATE notes")
        actions.removeAll()
    }

    override func tearDown() {
        client = nil
        memory = nil
    }

    private static func describe(_ action: SessionAction) -> String {
        switch action {
        case .connection(.send(let output)): "send " + output.text.trimmingCharacters(in: .newlines)
        case .connection(.deliver(let delivery)): "deliver " + String(decoding: delivery.bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
        case .connection(.pauseReading): "pauseReading"
        case .connection(.resumeReading): "resumeReading"
        case .commit(let operation, _): "commit \(operation)".prefix(40).description
        case .read(let query): "read \(query)"
        case .checkPassword(let user, _): "checkPassword \(user)"
        case .checkToken: "checkToken"
        case .verifyPassword(let user, _): "verifyPassword \(user)"
        case .hashPassword(_, let ticket): "hashPassword \(ticket)"
        case .checkInvitation: "checkInvitation"
        case .announce(let event): "announce \(event)"
        case .subscribe(let collection): "subscribe \(collection)"
        case .unsubscribe(let collection): "unsubscribe \(collection)"
        case .connection(.close(let reason)): "close \(reason.rawValue)"
        case .connection(.closeNow): "closeNow"
        }
    }

    func testAReadWaitsForTheConnectionsEarlierWriteToCommit() throws {
        holdCommits = true
        try client.send(#"p PUT notes n1 0 {"text":"hi"}"#)
        try client.send("g GET notes n1")
        client.turnLoop(for: 0.2)
        // The write went to the committer; the read waits behind it, so nothing is sent yet.
        XCTAssertEqual(actions.count, 1, "\(actions)")
        XCTAssertTrue(actions.first?.hasPrefix("commit put") ?? false, "\(actions)")
        holdCommits = false
        heldCommits.forEach { $0() }
        XCTAssertEqual(try client.readLine(), "p OK PUT notes n1 1 1")
        XCTAssertEqual(try client.readLine(), #"g OK GET notes n1 1 a0 {"text":"hi"}"#)
        XCTAssertEqual(actions.dropFirst().filter { $0.hasPrefix("send") }, ["send p OK PUT notes n1 1 1", #"send g OK GET notes n1 1 a0 {"text":"hi"}"#])
    }

    func testSubscribingReplaysThenSubscribesAndUnsubscribingStops() throws {
        try client.send("s SUB notes SINCE 0")
        XCTAssertEqual(try client.readLine(), "s OK SUB notes 0")
        try client.send("u UNSUB notes")
        XCTAssertEqual(try client.readLine(), "u OK UNSUB notes")
        // The replay is a read the store answers off the loop (as lines: a byte connection); the
        // subscription starts with it.
        XCTAssertEqual(actions, [
            #"read changeLines(collection: "notes", since: 0, limit: 512)"#, "subscribe notes", "send s OK SUB notes 0", "unsubscribe notes",
            "send u OK UNSUB notes",
        ])
    }

    /// A drop (or rename) that commits while a SUB's replay page is being read: the subscriber
    /// hears of it and its SUB is an error, not a subscription to a name that is gone (an agent
    /// took such an OK as "the folder is missing" and overwrote what it said about the drop).
    func testACollectionDroppedOrRenamedDuringAReplayEndsTheSUBWithAnError() throws {
        let admin = memory.connect()
        try admin.send("h HELLO 1")
        try admin.send("a AUTH alice pw")
        XCTAssertTrue(try admin.readLine()?.hasPrefix("h OK HELLO 1 ") ?? false)
        XCTAssertEqual(try admin.readLine(), "a OK AUTH alice")
        for (name, change, notice, error) in [
            ("notes", "d DROP notes", "* DROPPED notes", "s ERR NOT_FOUND no collection notes"),
            ("memos", "r RENAME memos kept", "* RENAMED memos kept", "s ERR NOT_FOUND no collection memos"),
        ] {
            if name != "notes" { try admin.expect("c CREATE \(name)", equals: "c OK CREATE \(name)") }
            try admin.expect(#"p PUT \#(name) n1 0 {"text":"hi"}"#, prefix: "p OK PUT \(name) n1 1 ")
            holdReads = true
            try client.send("s SUB \(name) SINCE 0")
            client.turnLoop(for: 0.05)
            XCTAssertEqual(heldReads.count, 1, "the replay's read is held")
            try admin.expect(change, prefix: notice)
            XCTAssertTrue(try admin.line().hasPrefix(change.prefix(2) + "OK "))
            XCTAssertEqual(try client.readLine(), notice)
            holdReads = false
            let held = heldReads
            heldReads = []
            held.forEach { $0() }
            XCTAssertEqual(try client.readLine(), error)
            try client.expect("g PING", equals: "g OK PONG")
            XCTAssertFalse(actions.contains("subscribe \(name)"), "\(actions)")
        }
    }

    func testAnUnknownVerbIsAnErrorAndOnlyQuitCloses() throws {
        try client.send("f FLY")
        XCTAssertEqual(try client.readLine(), #"f ERR UNKNOWN_COMMAND unknown verb "FLY""#)
        try client.send("q QUIT")
        XCTAssertEqual(try client.readLine(), "q OK BYE")
        XCTAssertNil(try client.readLine())
        XCTAssertEqual(actions, [#"send f ERR UNKNOWN_COMMAND unknown verb "FLY""#, "send q OK BYE", "close quit"])
    }

    func testALineOverTheLimitIsSaidGoodbyeToAndClosed() throws {
        try client.send("x " + String(repeating: "y", count: 2 << 20))
        XCTAssertEqual(try client.readLine(), "* BYE TOO_LARGE")
        XCTAssertNil(try client.readLine())
        XCTAssertEqual(actions, ["send * BYE TOO_LARGE", "close lineTooLong"])
    }
}
