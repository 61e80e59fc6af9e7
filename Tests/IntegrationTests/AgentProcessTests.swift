import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Agent tests that need the `plistsync agent` and `serve` processes themselves: an agent
/// killed with SIGKILL mid-sync, and what each process maps into memory.
final class AgentProcessTests: XCTestCase {
    private var server: TestServer!
    private var a: TestAgent!
    private var b: TestAgent!
    private let ada: Fields = ["name": .string("Ada Lovelace"), "phone": .string("555-0100")]

    override func setUpWithError() throws {
        server = try TestServer.running(users: [("alice", "pw")])
        a = try TestAgent(server: server, user: "alice", password: "pw", device: "laptop")
        b = try TestAgent(server: server, user: "alice", password: "pw", device: "desktop")
    }

    override func tearDown() {
        a = nil
        b = nil
        server = nil
    }

    func testAgentKilledMidThousandFileSyncConvergesAfterRestart() throws {
        try a.start()
        try b.start()
        try a.save("bulk", "seed", ["n": .integer(-1)])
        eventually { b.fields("bulk", "seed") != nil }
        b.stop(signal: SIGKILL)
        for index in 0..<1000 {
            try a.save("bulk", "r\(index)", ["n": .integer(Int64(index)), "text": .string(String(repeating: "x", count: 100))])
        }
        eventually(20) { (try? String(contentsOfFile: a.directory + "/.plistsync/status.json", encoding: .utf8))?.contains("\"pushed\":1001") == true }
        try b.start()
        usleep(150_000)
        b.stop(signal: SIGKILL)
        try b.start()
        eventually(30, "\(b.snapshot()["bulk"]?.count ?? 0) files in B") { b.snapshot()["bulk"]?.count == 1001 }
        eventually(20, "A: \(a.snapshot())\nB: \(b.snapshot())") { a.snapshot() == b.snapshot() }
    }

    /// Issue 20 item 4: libpq is loaded only by a server that connects to PostgreSQL. An agent
    /// and a server on SQLite mapped it and what it pulls in (Kerberos, LDAP, GnuTLS: about
    /// 3 MiB of an idle agent's memory).
    func testNeitherAnAgentNorAServerOnSQLiteLoadsLibpq() throws {
        try a.start()
        try a.save("contacts", "Ada", ada)
        eventually { a.log().contains("connected") }
        for (name, pid) in [("agent", a.pid), ("server", server.pid)] {
            // Read to the end: /proc reports a size of 0, which String(contentsOfFile:) trusts.
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/maps"))
            let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            try handle.close()
            XCTAssertTrue(maps.contains("libsqlite3"), "\(name): the maps were read")
            XCTAssertFalse(maps.contains("libpq"), "\(name) maps libpq")
            XCTAssertFalse(maps.contains("libgnutls"), "\(name) maps libgnutls")
        }
    }
}
