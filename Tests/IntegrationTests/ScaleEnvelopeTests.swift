import Foundation
import XCTest

/// Issue 30: a 50k-record list on one node, against a real server.
final class ScaleEnvelopeTests: XCTestCase {
    /// A list of `count` records `r0000000`… with ~200-byte fields, loaded over one connection
    /// a thousand requests at a time; the seq it is current to.
    private func loadList(_ name: String, count: Int, bytes: Int = 200, by client: LineClient) throws -> Int {
        try client.expect("c CREATE \(name)", equals: "c OK CREATE \(name)")
        let filler = String(repeating: "x", count: bytes)
        var first = 0
        while first < count {
            let last = min(first + 1000, count)
            var batch = ""
            for index in first..<last { batch += "p PUT \(name) \(Self.id(index)) 0 {\"name\":\"\(index)\",\"note\":\"\(filler)\"}\n" }
            try client.send(bytes: Array(batch.utf8))
            for index in first..<last { XCTAssertTrue(try client.line().hasPrefix("p OK PUT \(name) \(Self.id(index)) 1 ")) }
            first = last
        }
        let page = try client.expect("l LIST \(name) LIMIT 1", prefix: "* RECORD ")
        XCTAssertTrue(page.hasPrefix("* RECORD \(name) r0000000 1 "))
        let done = try client.line().split(separator: " ")
        XCTAssertEqual(done.prefix(4), ["l", "OK", "LIST", Substring(name)])
        return Int(done[5])!
    }

    private static func id(_ index: Int) -> String { String(format: "r%07d", index) }

    /// Alternating `MOVE … BEFORE` the same record used to re-key the whole collection every
    /// ~180 moves: 50k CHANGEs at once, past every subscriber's 8 MiB output limit (`* BYE SLOW`).
    /// Now a crowded gap re-keys a few neighbours: every subscriber stays, and the moves cost
    /// a bounded number of changes each.
    func testTenThousandMovesIntoOneGapOfA50kListKeepEverySubscriber() throws {
        let server = try LiveServer.running(users: [("alice", "pw"), ("bob", "pw")])
        let alice = try server.login("alice", "pw")
        let records = 50_002
        let seq = try loadList("big", count: records, by: alice)
        try alice.expect("g GRANT big bob read", equals: "g OK GRANT")
        let subscribers = [try server.login("bob", "pw"), try server.login("alice", "pw")]
        for subscriber in subscribers { try subscriber.expect("s SUB big SINCE \(seq)", equals: "s OK SUB big \(seq)") }

        let anchor = Self.id(records - 3), moving = [Self.id(records - 2), Self.id(records - 1)]
        var revs = [moving[0]: 1, moving[1]: 1]
        let moves = 10_000
        for index in 0..<moves {
            let id = moving[index % 2]
            try alice.send("m MOVE big \(id) \(revs[id]!) BEFORE \(anchor)")
            var words = try alice.line().split(separator: " ").map(String.init)
            if words[1] == "ERR", words[2] == "CONFLICT" {
                // A re-key raised this record's rev: move it from the rev it has now.
                try alice.send("m MOVE big \(id) \(words[5]) BEFORE \(anchor)")
                words = try alice.line().split(separator: " ").map(String.init)
            }
            XCTAssertEqual(Array(words.prefix(5)), ["m", "OK", "MOVE", "big", id])
            guard words.count > 5, let rev = Int(words[5]) else { return XCTFail("no rev in \(words)") }
            revs[id] = rev
        }

        for subscriber in subscribers {
            var changes = 0, longestKey = 0
            var last: [String: Int] = [:]
            while last[moving[0]] != revs[moving[0]] || last[moving[1]] != revs[moving[1]] {
                let line = try subscriber.line()
                XCTAssertFalse(line.hasPrefix("* BYE"), line)
                guard !line.hasPrefix("* BYE") else { return }
                let words = line.split(separator: " ", maxSplits: 7)
                XCTAssertEqual(words.prefix(3), ["*", "CHANGE", "big"])
                changes += 1
                last[String(words[4])] = Int(words[5])
                longestKey = max(longestKey, words[6].count)
            }
            try subscriber.expect("p PING", equals: "p OK PONG")
            XCTAssertLessThan(changes, moves * 12 / 10, "a move costs O(1) changes: \(changes) for \(moves)")
            XCTAssertLessThanOrEqual(longestKey, 40)
        }
        // The two moved records sit right before the anchor; the rest kept their order.
        try alice.send("l LIST big AFTER \(try keyOf(Self.id(records - 6), in: alice)) \(Self.id(records - 6)) LIMIT 10")
        var order: [String] = []
        while true {
            let line = try alice.line()
            if line.hasPrefix("l OK LIST") { break }
            order.append(String(line.split(separator: " ")[3]))
        }
        XCTAssertEqual(order, [Self.id(records - 5), Self.id(records - 4), moving[(moves - 2) % 2], moving[(moves - 1) % 2], anchor])
    }

    private func keyOf(_ id: String, in client: LineClient) throws -> String {
        let reply = try client.expect("k GET big \(id)", prefix: "k OK GET big \(id) ")
        return String(reply.split(separator: " ")[6])
    }

    /// A LIST used to read the whole collection into memory before its first page went out, and
    /// held it until the client had read it all: 4 clients listing a 1M-record collection took the
    /// server from 131 to over 400 MiB. Now each listing is read a page at a time from a snapshot
    /// of its own, as its client reads.
    func testListingsOfALargeCollectionAreReadAsTheClientsReadThem() throws {
        let server = try TestServer.running()
        let alice = try server.login("alice", "pw")
        let records = 50_000
        let seq = try loadList("big", count: records, bytes: 1_000, by: alice)
        let idle = server.residentKilobytes()
        var readers: [LineClient] = []
        for _ in 0..<4 {
            let reader = try LineClient(port: server.port, receiveBufferBytes: 16_384)
            try reader.expect("h HELLO 1", prefix: "h OK HELLO 1 ")
            try reader.expect("a AUTH alice pw", equals: "a OK AUTH alice")
            // Begun: its first record is here.
            try reader.expect("l LIST big", prefix: "* RECORD big r0000000 ")
            readers.append(reader)
        }
        // Changes made while the listings wait are not in them: each is one snapshot.
        try alice.expect("p PUT big late 0 {}", prefix: "p OK PUT big late 1 ")
        try alice.expect("d DEL big r0000001 1", prefix: "d OK DEL big r0000001 2")
        var largest = 0
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline {
            largest = max(largest, server.residentKilobytes())
            usleep(50_000)
        }
        XCTAssertLessThan(largest - idle, 48 * 1024, "4 listings of \(records) records of 1 KB waiting: RSS \(idle) -> \(largest) KiB")
        for reader in readers {
            var count = 1
            var last: String?
            while true {
                let line = try reader.line()
                if line.hasPrefix("l ") {
                    XCTAssertEqual(line, "l OK LIST big \(records) \(seq)")
                    break
                }
                let id = String(line.split(separator: " ", maxSplits: 4)[3])
                last = id
                count += 1
            }
            XCTAssertEqual(count, records)
            XCTAssertEqual(last, Self.id(records - 1))
        }
        try alice.expect("l LIST big LIMIT 2", prefix: "* RECORD big r0000000 ")
        XCTAssertTrue(try alice.line().hasPrefix("* RECORD big r0000002 "), "the DEL is in a listing begun after it")
    }
}
