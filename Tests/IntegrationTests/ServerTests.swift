import Foundation
import XCTest

/// The server over real TCP on 127.0.0.1, with a real SQLite file in a temp folder: what
/// depends on the socket or the file (the protocol itself: `ProtocolTests`; the process:
/// `ServerProcessTests`).
final class ServerTests: XCTestCase {
    private var server: LiveServer!

    override func setUpWithError() throws {
        server = try LiveServer.running(users: [("alice", "wonderland")])
    }

    override func tearDown() {
        server = nil
    }

    private func aliceWithContacts() throws -> LineClient {
        let alice = try server.login("alice", "wonderland")
        try alice.expect("c CREATE contacts", equals: "c OK CREATE contacts")
        return alice
    }

    /// Issue 47: the change log keeps every state, however quickly the next came (the 60-second
    /// rule is gone): a burst of saves leaves a version a save, each naming who replaced it.
    func testABurstOfSavesKeepsEveryStateAsAVersion() throws {
        let alice = try aliceWithContacts()
        for rev in 0..<5 { try alice.expect(#"p PUT contacts Ada \#(rev) {"n":\#(rev)}"#, prefix: "p OK PUT contacts Ada \(rev + 1) ") }
        try alice.send("v VERSIONS contacts Ada")
        for rev in (1...4).reversed() {
            let line = try alice.line()
            XCTAssertTrue(line.hasPrefix("* VERSION contacts Ada \(rev) "), line)
            XCTAssertTrue(line.hasSuffix(#" alice password - line {"n":\#(rev - 1)}"#), line)
        }
        XCTAssertEqual(try alice.line(), "v OK VERSIONS contacts Ada 4")
    }

    func testWrongPasswordsAreAnsweredAfterAFixedDelayThenPacedApart() throws {
        let client = try server.connect()
        var delays: [TimeInterval] = []
        for attempt in 0..<7 {
            let started = Date()
            try client.expect("w\(attempt) AUTH alice wrong", prefix: "w\(attempt) ERR AUTH_FAILED ")
            delays.append(Date().timeIntervalSince(started))
        }
        // Every failure waits the same second; once the address has used its free strikes,
        // each further attempt waits for its turn as well.
        for delay in delays.prefix(5) { XCTAssertEqual(delay, 1.0, accuracy: 0.25, "\(delays)") }
        XCTAssertGreaterThan(delays[6], 1.6, "\(delays)")
        // The account's own user, from an address it has not logged in from but that has no
        // strikes of its own, still gets in (the account's pace allows 5 free strikes; 7 used).
        let started = Date()
        try server.connect(from: "127.0.0.5").expect("ok AUTH alice wonderland", equals: "ok OK AUTH alice")
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }

    func testRestartKeepsEveryRecordAndShutdownSaysBye() throws {
        let alice = try aliceWithContacts()
        for index in 0..<50 {
            try alice.send("p\(index) PUT contacts r\(index) 0 {\"n\":\(index)}")
        }
        for index in 0..<50 { XCTAssertTrue(try alice.line().hasPrefix("p\(index) OK PUT")) }
        server.stop()
        XCTAssertEqual(try alice.readLine(), "* BYE SHUTDOWN")
        XCTAssertNil(try alice.readLine())
        try server.start()
        let again = try server.login("alice", "wonderland")
        try again.send("l LIST contacts")
        for index in 0..<50 {
            XCTAssertTrue(try again.line().hasSuffix("{\"n\":\(index)}"))
        }
        XCTAssertEqual(try again.line(), "l OK LIST contacts 50 50")
        XCTAssertTrue(try again.expect("s STATS", prefix: "s OK STATS {").contains("\"seq\":50,"))
    }

    func testHalfClosedClientStillGetsItsReplies() throws {
        let client = try server.connect()
        try client.send("a AUTH alice wonderland\nb CREATE lists\nc PUT lists one 0 {}\nd PING")
        shutdown(client.fileDescriptor, Int32(SHUT_WR))
        XCTAssertEqual(try client.readLine(), "a OK AUTH alice")
        XCTAssertEqual(try client.readLine(), "b OK CREATE lists")
        XCTAssertEqual(try client.readLine(), "c OK PUT lists one 1 1")
        XCTAssertEqual(try client.readLine(), "d OK PONG")
        XCTAssertNil(try client.readLine())
    }
}

/// What only the `plistsync serve` process shows: SIGKILL right after an acknowledgement.
final class ServerProcessTests: XCTestCase {
    func testKill9RightAfterOKLosesNothing() throws {
        let server = try TestServer.running(users: [("alice", "wonderland")])
        let alice = try server.login("alice", "wonderland")
        try alice.expect("c CREATE contacts", equals: "c OK CREATE contacts")
        try alice.expect(#"a PUT contacts Ada 0 {"phone":"555"}"#, equals: "a OK PUT contacts Ada 1 1")
        server.stop(signal: SIGKILL)
        try server.start()
        let again = try server.login("alice", "wonderland")
        try again.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 1 a0 {"phone":"555"}"#)
        try again.expect("s STATS", prefix: "s OK STATS {")
    }
}
