import Foundation
import XCTest
@testable import ServerKit

/// The line protocol's verbs, access rules and limits, against a server in memory (the test
/// kit's byte connection and `MemoryStore`): what the session answers does not depend on a
/// socket or a file. What does (restarts, kill -9, half-closed sockets, the paced password
/// checks, the SQLite store's version keeping) stays in `ServerTests` over TCP and SQLite.
final class ProtocolTests: XCTestCase {
    private var server: InMemoryServer!

    private static func server(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> InMemoryServer {
        try InMemoryServer(users: [
            (name: "alice", password: "wonderland", admin: false),
            (name: "bob", password: "builder", admin: false),
            (name: "root", password: "toor", admin: true),
        ], configure: configure)
    }

    override func setUpWithError() throws {
        server = try Self.server()
    }

    override func tearDown() {
        server = nil
    }

    private func aliceWithContacts() throws -> BufferClient {
        let alice = try server.login("alice", "wonderland")
        try alice.expect("c CREATE contacts", equals: "c OK CREATE contacts")
        return alice
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
        let anonymous = server.connect()
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
        let agent = server.connect()
        try agent.expect("a AUTH TOKEN \(token)", equals: "a OK AUTH alice")
        try alice.expect("r TOKEN REVOKE \(token)", equals: "r OK TOKEN REVOKED")
        try alice.expect("r2 TOKEN REVOKE \(token)", prefix: "r2 ERR NOT_FOUND ")
        let again = server.connect()
        try again.expect("a AUTH TOKEN \(token)", prefix: "a ERR AUTH_FAILED ")
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

    func testQuitSaysByeAndCloses() throws {
        let client = server.connect()
        try client.expect("q QUIT", equals: "q OK BYE")
        XCTAssertNil(try client.readLine())
    }

    // MARK: - Limits and access changes on a live connection

    /// 100,000 collections per user used to be allowed.
    func testCollectionsPerUserAreLimited() throws {
        server = try Self.server { $0.maxCollectionsPerUser = 3 }
        let alice = try server.login("alice", "wonderland")
        for index in 0..<3 { try alice.expect("c\(index) CREATE c\(index)", equals: "c\(index) OK CREATE c\(index)") }
        try alice.expect("c3 CREATE c3", prefix: "c3 ERR QUOTA alice owns 3 collections")
        try alice.expect("l COLLECTIONS", equals: "* COLLECTION c0 admin 0")
        XCTAssertEqual(try alice.line(), "* COLLECTION c1 admin 0")
        XCTAssertEqual(try alice.line(), "* COLLECTION c2 admin 0")
        XCTAssertEqual(try alice.line(), "l OK COLLECTIONS 3")
        let root = try server.login("root", "toor")
        for index in 0..<5 { try root.expect("r\(index) CREATE r\(index)", equals: "r\(index) OK CREATE r\(index)") }
    }

    func testRemovingAccessEndsALiveSubscription() throws {
        let alice = try server.login("alice", "wonderland")
        try alice.expect("c CREATE c", equals: "c OK CREATE c")
        try alice.expect("g GRANT c bob read", equals: "g OK GRANT")
        let bob = try server.login("bob", "builder")
        try bob.expect("s SUB c SINCE 0", equals: "s OK SUB c 0")
        try alice.expect("p PUT c one 0 {}", prefix: "p OK PUT c one 1 1")
        XCTAssertEqual(try bob.line(), "* CHANGE c 1 one 1 a0 {}")
        try alice.expect("n GRANT c bob none", equals: "n OK GRANT")
        XCTAssertEqual(try bob.line(), "* UNSUB c REVOKED")
        try alice.expect("p2 PUT c two 0 {}", prefix: "p2 OK PUT c two 1 ")
        try bob.expect("q PING", equals: "q OK PONG")
        try bob.expect("s2 SUB c SINCE 0", prefix: "s2 ERR FORBIDDEN ")
    }

    func testRevokingATokenClosesTheConnectionsThatUseIt() throws {
        let alice = try server.login("alice", "wonderland")
        let token = String(try alice.expect("t TOKEN NEW laptop", prefix: "t OK TOKEN pst_").split(separator: " ")[3])
        let device = server.connect()
        try device.expect("a AUTH TOKEN \(token)", equals: "a OK AUTH alice")
        try alice.expect("r TOKEN REVOKE \(token)", equals: "r OK TOKEN REVOKED")
        XCTAssertEqual(try device.readLine(timeout: 2), "* BYE REVOKED")
        XCTAssertNil(try device.readLine(timeout: 2))
        try alice.expect("p PING", equals: "p OK PONG")
    }

    /// Issue 19, item 6: writes waiting in the same batch cannot pass the quota together (two
    /// connections pipelining 10 × 100 kB each stored 2,000,160 bytes under a 1,000,000 quota).
    func testPipelinedWritesFromTwoConnectionsStayWithinTheQuota() throws {
        server = try Self.server { $0.maxBytesPerUser = 1_000_000 }
        let first = try server.login("alice", "wonderland")
        try first.expect("c CREATE c", equals: "c OK CREATE c")
        let second = try server.login("alice", "wonderland")
        let value = String(repeating: "q", count: 100_000)
        for (index, client) in [first, second].enumerated() {
            var batch = ""
            for row in 0..<10 { batch += "p PUT c r\(index)-\(row) 0 {\"v\":\"\(value)\"}\n" }
            try client.send(bytes: Array(batch.utf8))
        }
        var ok = 0
        var refused = 0
        for client in [first, second] {
            for _ in 0..<10 {
                let reply = try client.line()
                if reply.hasPrefix("p OK PUT") { ok += 1 } else if reply.hasPrefix("p ERR QUOTA") { refused += 1 } else { XCTFail(reply) }
            }
        }
        XCTAssertEqual(ok + refused, 20)
        let perRecord = "{\"v\":\"\(value)\"}".utf8.count
        XCTAssertLessThanOrEqual(ok * perRecord, 1_000_000, "\(ok) records of \(perRecord) bytes stored")
        XCTAssertEqual(ok, 1_000_000 / perRecord, "the quota fills up to the last record that fits")
    }

    /// On virtual time: the deadline is checked by the once-a-second housekeeping, so the BYE
    /// comes between one and two seconds after the last request, and the test takes microseconds.
    func testIdleConnectionsAreClosedWithByeIdle() throws {
        server = try Self.server { $0.idleTimeoutSeconds = 1 }
        let client = server.connect()
        try client.expect("p PING", equals: "p OK PONG")
        let lastRequest = server.scheduler.now
        XCTAssertEqual(try client.readLine(timeout: 5), "* BYE IDLE")
        XCTAssertGreaterThan(server.scheduler.now - lastRequest, 1_000, "not before the timeout")
        XCTAssertLessThanOrEqual(server.scheduler.now - lastRequest, 2_000, "within a housekeeping round of it")
        XCTAssertNil(try client.readLine(timeout: 5))
    }

    func testSinceOlderThanPurgedTombstonesIsExpired() throws {
        server = try Self.server { $0.tombstoneTTLSeconds = 1 }
        let alice = try server.login("alice", "wonderland")
        try alice.expect("c CREATE c", equals: "c OK CREATE c")
        try alice.expect("a PUT c a 0 {}", equals: "a OK PUT c a 1 1")
        try alice.expect("b PUT c b 0 {}", equals: "b OK PUT c b 1 2")
        try alice.expect("d DEL c a 1", equals: "d OK DEL c a 2 3")
        var expired = false
        for _ in 0..<40 where !expired {
            alice.turnLoop(for: 0.2)
            try alice.send("s SUB c SINCE 1")
            let reply = try alice.line()
            if reply.hasPrefix("s ERR EXPIRED ") {
                expired = true
            } else {
                while try alice.line() != "s OK SUB c 3" {}
                try alice.expect("u UNSUB c", equals: "u OK UNSUB c")
            }
        }
        XCTAssertTrue(expired)
        try alice.send("f SUB c SINCE 0")
        XCTAssertEqual(try alice.line(), "* CHANGE c 2 b 1 a1 {}")
        XCTAssertEqual(try alice.line(), "f OK SUB c 3")
        try alice.expect("g SUB c SINCE 3", equals: "g OK SUB c 3")
    }

    /// A line growing one byte at a time used to outlive `--idle-timeout`.
    func testTheIdleClockCountsCompleteLinesOnly() throws {
        server = try Self.server { $0.idleTimeoutSeconds = 2 }
        let alice = try server.login("alice", "wonderland")
        let started = server.scheduler.now
        var closed = false
        while server.scheduler.now - started < 6_000, !closed {
            try alice.send(bytes: Array("x".utf8))
            alice.turnLoop(for: 0.1)
            if let line = try? alice.readLine(timeout: 0.4) {
                XCTAssertEqual(line, "* BYE IDLE")
                closed = true
            }
        }
        XCTAssertTrue(closed)
        // Virtual milliseconds: a byte every half second did not keep it open past 2 s + a round.
        XCTAssertLessThanOrEqual(server.scheduler.now - started, 3_000)
    }
}
