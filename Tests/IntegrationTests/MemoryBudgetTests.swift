import Foundation
import XCTest

/// Issue 29: subscribers that never read, on either port, cannot take the server past its
/// memory budget, and the budget sheds only the ones holding the bytes: the writer and an idle
/// client stay connected. (Measured before: 200 event streams took a 256 MiB server +755–984
/// MiB; line subscribers stayed nearer but idle clients holding nothing were shed.)
final class MemoryBudgetTests: XCTestCase {
    static let budget = 32_000_000
    static let slowSubscribers = 100
    static let writes = 1000
    static let recordBytes = 10_000

    private func attack(subscribe: (TestServer, String) throws -> LineClient) throws {
        let server = try TestServer.running(["--http-listen", "127.0.0.1:0", "--max-buffered-bytes", "\(Self.budget)"], users: [("alice", "pw")])
        let writer = try server.login("alice", "pw")
        try writer.expect("c CREATE c", equals: "c OK CREATE c")
        let token = String(try writer.expect("t TOKEN NEW bench", prefix: "t OK TOKEN ").dropFirst("t OK TOKEN ".count))
        let idle = try server.login("alice", "pw")
        let subscribers = try (0..<Self.slowSubscribers).map { _ in try subscribe(server, token) }
        let baseline = server.residentKilobytes()

        let payload = #"{"v":""# + String(repeating: "x", count: Self.recordBytes) + #""}"#
        for index in 0..<Self.writes {
            try writer.send("p\(index) PUT c r\(index % 50) \(index < 50 ? 0 : index / 50) \(payload)")
            XCTAssertEqual(try writer.line(), "p\(index) OK PUT c r\(index % 50) \(index / 50 + 1) \(index + 1)")
        }
        let grown = (server.peakResidentKilobytes() - baseline) * 1024
        print("\(Self.slowSubscribers) slow subscribers, \(Self.writes) writes of \(Self.recordBytes) B: server peak +\(grown / 1_048_576) MiB against a \(Self.budget / 1_048_576) MiB budget")
        // Beyond the budget: the allocator's slack and the bytes of the batch being sent.
        XCTAssertLessThan(grown, Self.budget + 12 << 20, "the server's memory stays near its budget")
        XCTAssertTrue(server.log().contains("connections hold more than --max-buffered-bytes"), "the budget was needed")
        // The innocent: the writer and an idle client holding nothing are kept.
        try writer.expect("w PING", equals: "w OK PONG")
        try idle.expect("i PING", equals: "i OK PONG")
        let shed = server.log().split(separator: "\n").filter { $0.contains("connections hold more than --max-buffered-bytes") }
        XCTAssertTrue(shed.allSatisfy { !$0.contains("(this one 0)") }, "a connection holding nothing was shed:\n\(shed.joined(separator: "\n"))")
        _ = subscribers
    }

    func testEventStreamsThatNeverReadStayWithinTheBudget() throws {
        try attack { server, token in
            let stream = try LineClient(port: server.httpPort, receiveBufferBytes: 4096)
            try stream.send(bytes: Array("GET /api/collections/c/events HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8))
            XCTAssertEqual(try stream.readLine(), "HTTP/1.1 200 OK\r")
            return stream
        }
    }

    func testLineSubscribersThatNeverReadStayWithinTheBudget() throws {
        try attack { server, _ in
            let subscriber = try LineClient(port: server.port, receiveBufferBytes: 4096)
            try subscriber.expect("a AUTH alice pw", equals: "a OK AUTH alice")
            try subscriber.expect("s SUB c SINCE 0", equals: "s OK SUB c 0")
            return subscriber
        }
    }
}
