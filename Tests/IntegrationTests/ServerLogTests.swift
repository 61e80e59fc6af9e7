import Foundation
import XCTest

/// Issue 11, item 5: connections, logins (with the address, failed ones too), grants and
/// disconnects are one record each, as `key=value` text or, with `--log-format json`, JSON.
final class ServerLogTests: XCTestCase {
    private func exercise(_ server: TestServer) throws {
        let wrong = try server.connect()
        try wrong.expect("a AUTH alice nope", equals: "a ERR AUTH_FAILED wrong user name, password or token")
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE notes", equals: "c OK CREATE notes")
        try alice.expect("g GRANT notes bob read", equals: "g OK GRANT")
        try alice.expect("q QUIT", equals: "q OK BYE")
    }

    func testJSONRecordsNameTheEventTheUserAndTheAddress() throws {
        let server = try TestServer.running(["--log-format", "json"], users: [("alice", "pw"), ("bob", "pw")])
        try exercise(server)
        var records: [[String: String]] = []
        var lines: [Substring] = []
        eventually(5, server.log()) {
            // One read, complete lines only: the server may be writing the next record (issue
            // 19, item 8: a second read, or a half-written line, made the counts differ).
            let text = server.log()
            lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().filter { !$0.isEmpty }
            records = lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: String] }
            return records.contains { $0["event"] == "disconnect" && $0["reason"] == "quit" }
        }
        XCTAssertEqual(records.count, lines.count, "every line is one JSON object: \(lines)")
        XCTAssertTrue(records.contains { $0["event"] == "connect" && $0["address"] == "127.0.0.1" })
        XCTAssertTrue(records.contains { $0["event"] == "login_failed" && $0["user"] == "alice" && $0["code"] == "AUTH_FAILED" && $0["address"] == "127.0.0.1" })
        XCTAssertTrue(records.contains { $0["event"] == "login" && $0["user"] == "alice" && $0["with"] == "password" })
        XCTAssertTrue(records.contains { $0["event"] == "grant" && $0["collection"] == "notes" && $0["to"] == "bob" && $0["role"] == "read" && $0["by"] == "alice" })
        XCTAssertTrue(records.allSatisfy { $0["time"] != nil && $0["level"] != nil })
    }

    func testTextRecordsAreKeyValueLines() throws {
        let server = try TestServer.running(users: [("alice", "pw"), ("bob", "pw")])
        try exercise(server)
        eventually(5, server.log()) { server.log().contains("disconnect address=127.0.0.1 user=alice reason=quit") }
        XCTAssertTrue(server.log().contains("info login_failed user=alice address=127.0.0.1 code=AUTH_FAILED"), server.log())
        XCTAssertTrue(server.log().contains("info login user=alice address=127.0.0.1 with=password"), server.log())
    }
}

/// Issue 11, item 5: `--metrics-listen` answers `GET /metrics` in the Prometheus text format.
final class MetricsTests: XCTestCase {
    private func scrape(_ port: Int, path: String = "/metrics", request: String? = nil) throws -> [String] {
        let client = try LineClient(port: port)
        try client.send(bytes: Array((request ?? "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n").utf8))
        var lines: [String] = []
        while let line = try client.readLine() { lines.append(line.replacingOccurrences(of: "\r", with: "")) }
        return lines
    }

    /// Issue 19, item 7: idle connections to the metrics port are capped, so they cannot take
    /// the descriptors a protocol client needs (600 of them under a 512-descriptor limit kept a
    /// new client from its PONG until they timed out).
    func testIdleMetricsConnectionsCannotTakeTheDescriptorsClientsNeed() throws {
        let server = try TestServer.running(["--metrics-listen", "127.0.0.1:0"])
        let line = try XCTUnwrap(server.log().split(separator: "\n").first { $0.contains("metrics on http://") })
        let port = try XCTUnwrap(Int(line.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let pid = server.pid
        XCTAssertEqual(try PlistSyncShell.run("prlimit", ["--pid", "\(pid)", "--nofile=256:256"]), 0)
        var idle: [LineClient] = []
        for _ in 0..<300 { idle.append(try LineClient(port: port)) }
        let client = try server.connect()
        client.timeoutSeconds = 3
        try client.expect("p PING", equals: "p OK PONG")
        // The metrics port still answers a scrape.
        idle.removeAll()
        eventually(5) { ((try? self.scrape(port)) ?? []).first == "HTTP/1.1 200 OK" }
    }

    func testMetricsCountConnectionsChangesLoginsAndLag() throws {
        let server = try TestServer.running(["--metrics-listen", "127.0.0.1:0"])
        let line = try XCTUnwrap(server.log().split(separator: "\n").first { $0.contains("metrics on http://") })
        let port = try XCTUnwrap(Int(line.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE notes", equals: "c OK CREATE notes")
        for index in 1...3 { _ = try alice.expect("p PUT notes n\(index) 0 {\"i\":\(index)}", prefix: "p OK PUT") }
        let wrong = try server.connect()
        try wrong.expect("a AUTH alice nope", equals: "a ERR AUTH_FAILED wrong user name, password or token")

        let metrics = try scrape(port)
        XCTAssertEqual(metrics.first, "HTTP/1.1 200 OK")
        func value(_ series: String) -> Double? {
            metrics.first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        XCTAssertEqual(value("plistsync_connections"), 2, metrics.joined(separator: "\n"))
        XCTAssertEqual(value("plistsync_changes_total"), 3)
        XCTAssertEqual(value("plistsync_logins_total{result=\"ok\"}"), 1)
        XCTAssertEqual(value("plistsync_logins_total{result=\"failed\"}"), 1)
        XCTAssertEqual(value("plistsync_seq"), 3)
        XCTAssertNotNil(value("plistsync_fanout_pending_bytes_max"))
        XCTAssertTrue(metrics.contains("# TYPE plistsync_changes_total counter"))
        XCTAssertEqual(try scrape(port, path: "/").first, "HTTP/1.1 404 Not Found")
    }

    /// Issue 32, item 5: the metrics port was a second, hand-written HTTP reader (the request
    /// line's first two words, headers unread). It is served by HTTPKit now, under its rules.
    func testTheMetricsPortReadsRequestsAsTheAPIDoes() throws {
        let server = try TestServer.running(["--metrics-listen", "127.0.0.1:0"])
        let line = try XCTUnwrap(server.log().split(separator: "\n").first { $0.contains("metrics on http://") })
        let port = try XCTUnwrap(Int(line.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let head = try scrape(port, request: "HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertEqual(head.first, "HTTP/1.1 200 OK")
        XCTAssertFalse(head.contains { $0.hasPrefix("plistsync_") }, "HEAD has no body: \(head)")
        let post = try scrape(port, request: "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(post.first, "HTTP/1.1 405 Method Not Allowed")
        XCTAssertTrue(post.contains("Allow: GET, HEAD"), "\(post)")
        XCTAssertEqual(try scrape(port, request: "GET /metrics HTTP/1.1\r\nHost : localhost\r\n\r\n").first, "HTTP/1.1 400 Bad Request")
        XCTAssertEqual(try scrape(port, request: "GET /metrics?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n").first, "HTTP/1.1 200 OK")
    }
}
