import Foundation
import XCTest

/// A database that stalls (issue 19, item 1): PostgreSQL stopped with SIGSTOP for 5 s under a
/// node. Reads, logins and the housekeeping tick used to run on the loop thread, so one GET
/// waiting on the database froze every connection of the node (PINGs answered 3.5–4.5 s late).
/// Now reads run off the loop, a read with no answer in `--store-timeout` is answered
/// `ERR UNAVAILABLE`, and everyone else is served on.
final class StoreStallTests: XCTestCase {
    private var server: TestServer?
    private var frozen = false

    override func tearDown() {
        if frozen { try? TestPostgres.freeze(false) }
        server = nil
    }

    func testAStalledDatabaseDelaysNoPingAndAnswersUnavailable() throws {
        let url = try TestPostgres.freshDatabase()
        let server = try TestServer.running(["--store", url, "--store-timeout", "1"])
        self.server = server
        let reader = try server.login("alice", "pw")
        let pinger = try server.login("alice", "pw")
        let writer = try server.login("alice", "pw")
        try reader.expect("c CREATE inv", equals: "c OK CREATE inv")
        try reader.expect(#"p PUT inv r1 0 {"name":"lamp"}"#, equals: "p OK PUT inv r1 1 1")

        try TestPostgres.freeze(true)
        frozen = true
        let frozenAt = Date()
        // A read that waits on the database, and a write.
        try reader.send("g GET inv r1")
        try writer.send(#"w PUT inv r2 0 {"name":"desk"}"#)
        // Every PING on the same node is answered at once meanwhile.
        var latencies: [Double] = []
        var getReply: String?
        while Date().timeIntervalSince(frozenAt) < 4 {
            let sent = Date()
            try pinger.send("x PING")
            XCTAssertEqual(try pinger.readLine(timeout: 10), "x OK PONG")
            latencies.append(Date().timeIntervalSince(sent))
            if getReply == nil, let line = try? reader.readLine(timeout: 0.01) { getReply = line }
            usleep(20_000)
        }
        latencies.sort()
        let p99 = latencies[latencies.count * 99 / 100]
        print("PING during a 4 s database stall: \(latencies.count) pings, p50 \(latencies[latencies.count / 2] * 1000) ms, p99 \(p99 * 1000) ms, max \(latencies.last! * 1000) ms")
        XCTAssertLessThan(latencies.last!, 0.5, "a PING waited for the stalled database")
        // The read is told the store is not answering, well before the database comes back.
        if getReply == nil { getReply = try reader.readLine(timeout: 1) }
        XCTAssertEqual(getReply?.hasPrefix("g ERR UNAVAILABLE "), true, getReply ?? "no reply")
        // While the store is stalled, new reads, logins and writes are refused at once.
        let started = Date()
        XCTAssertEqual(try reader.expect("l LIST inv", prefix: "l ERR UNAVAILABLE ").isEmpty, false)
        try writer.send(#"v PUT inv r3 0 {"name":"chair"}"#)
        let newcomer = try server.connect()
        try newcomer.send("h HELLO 1")
        _ = try newcomer.line()
        try newcomer.send("a AUTH alice pw")
        XCTAssertEqual(try newcomer.line().hasPrefix("a ERR UNAVAILABLE "), true)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5)

        try TestPostgres.freeze(false)
        frozen = false
        // The write in flight when the database stopped commits once it resumes; the one sent
        // while it was stalled was not written and says so.
        XCTAssertEqual(try writer.readLine(timeout: 15), "w OK PUT inv r2 1 2")
        XCTAssertEqual(try writer.readLine(timeout: 15)?.hasPrefix("v ERR UNAVAILABLE "), true)
        // Once it answers again, so does the node.
        let deadline = Date().addingTimeInterval(15)
        var reply = ""
        while Date() < deadline {
            try reader.send("g GET inv r2")
            reply = try reader.line()
            if reply.hasPrefix("g OK") { break }
            usleep(100_000)
        }
        XCTAssertEqual(reply, #"g OK GET inv r2 1 a1 {"name":"desk"}"#)
        try reader.expect("v GET inv r3", equals: #"v ERR NOT_FOUND no record "r3" in inv"#)
    }
}
