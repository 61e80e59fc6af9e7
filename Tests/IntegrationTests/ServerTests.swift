import Foundation
import XCTest

/// The server over real TCP on 127.0.0.1, with a real SQLite file in a temp folder.
final class ServerTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
        try server.addUser("alice", password: "wonderland")
        try server.addUser("bob", password: "builder")
        try server.addUser("root", password: "toor", admin: true)
        try server.start()
    }

    override func tearDown() {
        server = nil
    }

    private func aliceWithContacts() throws -> LineClient {
        let alice = try server.login("alice", "wonderland")
        try alice.expect("c CREATE contacts", equals: "c OK CREATE contacts")
        return alice
    }

    /// By default a record's fields are kept as a version only if they lived a minute: a
    /// burst of saves leaves no row a save (a write costs no extra insert, the disk no copy).
    func testABurstOfSavesKeepsNoVersionsByDefault() throws {
        let alice = try aliceWithContacts()
        for rev in 0..<5 { try alice.expect(#"p PUT contacts Ada \#(rev) {"n":\#(rev)}"#, prefix: "p OK PUT contacts Ada \(rev + 1) ") }
        try alice.expect("v VERSIONS contacts Ada", equals: "v OK VERSIONS contacts Ada 0")
    }

    func testPipelinedRequestsAnswerInOrder() throws {
        let alice = try aliceWithContacts()
        var batch = ""
        for index in 0..<1000 {
            batch += index % 3 == 2 ? "g\(index) GET contacts r\(index - 1)\n" : "p\(index) PUT contacts r\(index) 0 {\"n\":\(index)}\n"
        }
        try alice.send(bytes: Array(batch.utf8))
        for index in 0..<1000 {
            let reply = try alice.line()
            if index % 3 == 2 {
                XCTAssertTrue(reply.hasPrefix("g\(index) OK GET contacts r\(index - 1) 1 "), reply)
                XCTAssertTrue(reply.hasSuffix("{\"n\":\(index - 1)}"), reply)
            } else {
                XCTAssertTrue(reply.hasPrefix("p\(index) OK PUT contacts r\(index) 1 "), reply)
            }
        }
        let list = try alice.expect("l LIST contacts", prefix: "* RECORD contacts r0 1 ")
        XCTAssertTrue(list.hasSuffix("{\"n\":0}"))
    }

    func testConflictCarriesTheServersState() throws {
        let alice = try aliceWithContacts()
        try alice.expect(#"a PUT contacts Ada 0 {"phone":"1"}"#, equals: "a OK PUT contacts Ada 1 1")
        try alice.expect(#"b PUT contacts Ada 1 {"phone":"2"}"#, equals: "b OK PUT contacts Ada 2 2")
        try alice.expect(#"c PUT contacts Ada 1 {"phone":"3"}"#, equals: #"c ERR CONFLICT contacts Ada 2 a0 {"phone":"2"}"#)
        try alice.expect(#"d PUT contacts Ada 0 {"phone":"4"}"#, equals: #"d ERR CONFLICT contacts Ada 2 a0 {"phone":"2"}"#)
        try alice.expect(#"e PUT contacts Nobody 3 {}"#, equals: "e ERR CONFLICT contacts Nobody 0 - MISSING")
        try alice.expect("f DEL contacts Ada 2", equals: "f OK DEL contacts Ada 3 3")
        try alice.expect("g DEL contacts Ada 2", equals: "g ERR CONFLICT contacts Ada 3 - DELETED")
        try alice.expect("h GET contacts Ada", equals: "h OK GET contacts Ada 3 - DELETED")
        // An edit beats a delete when it is based on the tombstone: the record comes back.
        try alice.expect(#"i PUT contacts Ada 3 {"phone":"5"}"#, equals: "i OK PUT contacts Ada 4 4")
    }

    func testMovesKeepOrder() throws {
        let alice = try aliceWithContacts()
        for (index, name) in ["A", "B", "C", "D"].enumerated() {
            try alice.expect("p\(index) PUT contacts \(name) 0 {}", prefix: "p\(index) OK PUT contacts \(name) 1 ")
        }
        try alice.expect("m1 MOVE contacts D 1 FIRST", prefix: "m1 OK MOVE contacts D 2 ")
        try alice.expect("m2 MOVE contacts A 1 AFTER C", prefix: "m2 OK MOVE contacts A 2 ")
        try alice.expect("m3 MOVE contacts B 1 BEFORE D", prefix: "m3 OK MOVE contacts B 2 ")
        try alice.expect("m4 MOVE contacts C 1 LAST", prefix: "m4 OK MOVE contacts C 2 ")
        try alice.expect("m5 MOVE contacts C 2 BEFORE Zed", prefix: "m5 ERR NOT_FOUND ")
        try alice.send("l LIST contacts")
        var order: [String] = []
        while case let line = try alice.line(), line.hasPrefix("* RECORD") {
            order.append(line.split(separator: " ")[3].description)
        }
        XCTAssertEqual(order, ["B", "D", "A", "C"])
    }

    func testSubscribeReplaysThenDeliversLiveChangesToOtherConnections() throws {
        let alice = try aliceWithContacts()
        try alice.expect(#"a PUT contacts Ada 0 {"v":1}"#, equals: "a OK PUT contacts Ada 1 1")
        try alice.expect(#"b PUT contacts Ada 1 {"v":2}"#, equals: "b OK PUT contacts Ada 2 2")
        try alice.expect(#"c PUT contacts Bob 0 {"v":1}"#, equals: "c OK PUT contacts Bob 1 3")
        try alice.expect("g GRANT contacts bob read", equals: "g OK GRANT")

        let bob = try server.login("bob", "builder")
        try bob.send("s SUB contacts SINCE 0")
        // Latest state per record only, in seq order.
        XCTAssertEqual(try bob.line(), #"* CHANGE contacts 2 Ada 2 a0 {"v":2}"#)
        XCTAssertEqual(try bob.line(), #"* CHANGE contacts 3 Bob 1 a1 {"v":1}"#)
        XCTAssertEqual(try bob.line(), "s OK SUB contacts 3")

        try alice.expect(#"d PUT contacts Cy 0 {"v":1}"#, equals: "d OK PUT contacts Cy 1 4")
        XCTAssertEqual(try bob.line(), #"* CHANGE contacts 4 Cy 1 a2 {"v":1}"#)
        try alice.expect("e DEL contacts Bob 1", equals: "e OK DEL contacts Bob 2 5")
        XCTAssertEqual(try bob.line(), "* CHANGE contacts 5 Bob 2 - DELETED")

        let late = try server.login("bob", "builder")
        try late.send("s SUB contacts SINCE 3")
        XCTAssertEqual(try late.line(), #"* CHANGE contacts 4 Cy 1 a2 {"v":1}"#)
        XCTAssertEqual(try late.line(), "* CHANGE contacts 5 Bob 2 - DELETED")
        XCTAssertEqual(try late.line(), "s OK SUB contacts 5")

        // The writer's own subscribed connection gets its change too.
        try alice.expect("s SUB contacts SINCE 5", equals: "s OK SUB contacts 5")
        try alice.send(#"f PUT contacts Cy 1 {"v":2}"#)
        XCTAssertEqual(try alice.line(), "f OK PUT contacts Cy 2 6")
        XCTAssertEqual(try alice.line(), #"* CHANGE contacts 6 Cy 2 a2 {"v":2}"#)
        try bob.expect("u UNSUB contacts", prefix: "* CHANGE contacts 6 ")
        XCTAssertEqual(try bob.line(), "u OK UNSUB contacts")
        try bob.expect("w PUT contacts X 0 {}", prefix: "w ERR FORBIDDEN ")
    }

    func testAccessRules() throws {
        let anonymous = try server.connect()
        for request in ["a LIST contacts", "b CREATE x", "c PUT contacts a 0 {}", "d COLLECTIONS", "e STATS", "f TOKEN NEW"] {
            try anonymous.expect(request, prefix: "\(request.prefix(1)) ERR AUTH_REQUIRED ")
        }
        try anonymous.expect("g PING", equals: "g OK PONG")
        try anonymous.expect("h HELLO 2", prefix: "h ERR UNSUPPORTED_VERSION ")

        let alice = try aliceWithContacts()
        try alice.expect("x CREATE contacts", prefix: "x ERR EXISTS ")
        let bob = try server.login("bob", "builder")
        try bob.expect("a GET contacts Ada", prefix: "a ERR FORBIDDEN ")
        try bob.expect("b SUB contacts SINCE 0", prefix: "b ERR FORBIDDEN ")
        try bob.expect("c GRANT contacts bob admin", prefix: "c ERR FORBIDDEN ")
        try bob.expect("d LIST nothing", prefix: "d ERR NOT_FOUND ")
        try bob.expect("e COLLECTIONS", equals: "e OK COLLECTIONS 0")

        try alice.expect("g GRANT contacts bob write", equals: "g OK GRANT")
        XCTAssertEqual(try bob.line(), "* COLLECTION contacts write 0")
        try bob.expect("f PUT contacts Bob 0 {}", equals: "f OK PUT contacts Bob 1 1")
        try bob.expect("h GRANT contacts alice read", prefix: "h ERR FORBIDDEN ")
        try alice.expect("i GRANT contacts nobody read", prefix: "i ERR NOT_FOUND ")
        try alice.expect("j GRANT contacts bob none", equals: "j OK GRANT")
        XCTAssertEqual(try bob.line(), "* COLLECTION contacts none 1")
        try bob.expect("k GET contacts Bob", prefix: "k ERR FORBIDDEN ")

        let root = try server.login("root", "toor")
        try root.expect("r GET contacts Bob", equals: "r OK GET contacts Bob 1 a0 {}")
    }

    func testTokensLoginAndRevocation() throws {
        let alice = try server.login("alice", "wonderland")
        let reply = try alice.expect("t TOKEN NEW laptop", prefix: "t OK TOKEN pst_")
        let token = String(reply.split(separator: " ")[3])
        let agent = try server.connect()
        try agent.expect("a AUTH TOKEN \(token)", equals: "a OK AUTH alice")
        try alice.expect("r TOKEN REVOKE \(token)", equals: "r OK TOKEN REVOKED")
        try alice.expect("r2 TOKEN REVOKE \(token)", prefix: "r2 ERR NOT_FOUND ")
        let again = try server.connect()
        try again.expect("a AUTH TOKEN \(token)", prefix: "a ERR AUTH_FAILED ")
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

    func testGarbageGetsErrorsAndTheServerKeepsServing() throws {
        let alice = try aliceWithContacts()
        let bystander = try server.login("bob", "builder")
        let garbage: [(String, String)] = [
            ("!!!", "* ERR BAD_REQUEST"),
            ("\"quoted\" PING", "* ERR BAD_REQUEST"),
            (String(repeating: "t", count: 40) + " PING", "* ERR BAD_REQUEST"),
            ("g1", "g1 ERR BAD_REQUEST"),
            ("g2 FROB", "g2 ERR UNKNOWN_COMMAND"),
            ("g3 PING PONG", "g3 ERR BAD_REQUEST"),
            ("g4 PUT contacts", "g4 ERR BAD_REQUEST"),
            ("g5 PUT contacts a 0", "g5 ERR BAD_REQUEST"),
            ("g6 PUT contacts a 0 {\"x\":", "g6 ERR BAD_REQUEST"),
            ("g7 PUT contacts a 0 {\"x\":null}", "g7 ERR BAD_REQUEST"),
            ("g8 PUT contacts a 0 [1,2]", "g8 ERR BAD_REQUEST"),
            ("g9 PUT contacts a zero {}", "g9 ERR BAD_REQUEST"),
            ("g10 PUT contacts a -4 {}", "g10 ERR BAD_REQUEST"),
            ("g11 PUT ../etc a 0 {}", "g11 ERR BAD_REQUEST"),
            ("g12 PUT contacts .hidden 0 {}", "g12 ERR BAD_REQUEST"),
            ("g13 GET contacts \"unterminated", "g13 ERR BAD_REQUEST"),
            ("g14 SUB contacts SINCE -1", "g14 ERR BAD_REQUEST"),
            ("g15 SUB contacts UNTIL 3", "g15 ERR BAD_REQUEST"),
            ("g16 MOVE contacts a 1 UP", "g16 ERR BAD_REQUEST"),
            ("g17 GRANT contacts bob king", "g17 ERR BAD_REQUEST"),
            ("g18 PUT contacts a 0 {\"$weird\":1}", "g18 ERR BAD_REQUEST"),
            ("g19 PUT contacts a 0 {\"d\":{\"$date\":\"tomorrow\"}}", "g19 ERR BAD_REQUEST"),
            ("g20 PUT contacts a 0 {\"n\":123456789012345678901234567890}", "g20 ERR BAD_REQUEST"),
            ("g21 PUT contacts a 0 {} {}", "g21 ERR BAD_REQUEST"),
            ("g22 GET contacts a\u{7F}", "g22 ERR BAD_REQUEST"),
            ("g23 TOKEN DANCE", "g23 ERR BAD_REQUEST"),
        ]
        for (request, expectedPrefix) in garbage {
            try alice.expect(request, prefix: expectedPrefix + " ")
        }
        try alice.send(bytes: Array("g24 GET contacts ".utf8) + [0xC3, 0x28] + [0x0A])
        XCTAssertTrue(try alice.line().hasPrefix("g24 ERR BAD_REQUEST "))
        try alice.send(bytes: [0xFF, 0xFE, 0x0A])
        XCTAssertTrue(try alice.line().hasPrefix("* ERR BAD_REQUEST "))
        try alice.expect("ok PUT contacts a 0 {}", equals: "ok OK PUT contacts a 1 1")
        try bystander.expect("p PING", equals: "p OK PONG")
    }

    func testOverlongLineClosesOnlyThatConnection() throws {
        let alice = try aliceWithContacts()
        let bystander = try server.login("bob", "builder")
        let huge = "x PUT contacts big 0 {\"a\":\"" + String(repeating: "y", count: 1_100_000) + "\"}"
        try? alice.send(huge)
        var last: String?
        while let line = try alice.readLine() { last = line }
        XCTAssertEqual(last, "* BYE TOO_LARGE")
        try bystander.expect("p PING", equals: "p OK PONG")
    }

    func testRecordOverLimitIsRefusedAndConnectionLives() throws {
        let alice = try aliceWithContacts()
        let big = "x PUT contacts big 0 {\"a\":\"" + String(repeating: "y", count: 300_000) + "\"}"
        try alice.expect(big, prefix: "x ERR TOO_LARGE ")
        try alice.expect("p PING", equals: "p OK PONG")
    }

    func testRestartKeepsEveryRecordAndShutdownSaysBye() throws {
        let alice = try aliceWithContacts()
        for index in 0..<50 {
            try alice.send("p\(index) PUT contacts r\(index) 0 {\"n\":\(index)}")
        }
        for index in 0..<50 { XCTAssertTrue(try alice.line().hasPrefix("p\(index) OK PUT")) }
        XCTAssertEqual(server.stop(signal: SIGTERM), 0)
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

    func testKill9RightAfterOKLosesNothing() throws {
        let alice = try aliceWithContacts()
        try alice.expect(#"a PUT contacts Ada 0 {"phone":"555"}"#, equals: "a OK PUT contacts Ada 1 1")
        server.stop(signal: SIGKILL)
        try server.start()
        let again = try server.login("alice", "wonderland")
        try again.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 1 a0 {"phone":"555"}"#)
        try again.expect("s STATS", prefix: "s OK STATS {")
    }

    func testQuitSaysByeAndCloses() throws {
        let client = try server.connect()
        try client.expect("q QUIT", equals: "q OK BYE")
        XCTAssertNil(try client.readLine())
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
