import XCTest

@testable import ServerKit

/// Whom the memory budget closes, on sessions in memory whose unread bytes the test sets:
/// connections already closing go first, then the largest live holders; a connection holding
/// next to nothing is never shed (issue 29: an idle client and the writer were).
final class MemoryBudgetPolicyTests: XCTestCase {
    func testTheBudgetTakesBytesFromThoseHoldingThemOnly() throws {
        let memory = try InMemoryServer(users: [(name: "alice", password: "pw", admin: false)], configure: { $0.maxBufferedBytes = 8 << 20 })
        func loggedIn() throws -> BufferClient {
            let client = memory.connect()
            try client.send("a AUTH alice pw")
            XCTAssertEqual(try client.readLine(), "a OK AUTH alice")
            return client
        }
        let hoarder = try loggedIn()
        let closing = try loggedIn()
        let idle = try loggedIn()
        let writer = try loggedIn()
        let anonymous = memory.connect()
        hoarder.holdUnread(10 << 20)
        closing.holdUnread(10 << 20)
        closing.session?.sayGoodbye(.slow)  // a slow subscriber waiting out its grace
        writer.holdUnread(30 << 10)

        memory.turn { $0.enforceMemoryBudget() }
        hoarder.turnLoop(for: 0.05)
        XCTAssertTrue(closing.isClosed, "a closing connection holding bytes is let go at once")
        XCTAssertTrue(hoarder.isClosed, "the largest live holder is shed")
        for (name, client) in [("idle", idle), ("writer", writer), ("anonymous", anonymous)] {
            XCTAssertFalse(client.isClosed, "\(name) holds next to nothing and is kept")
        }
        try idle.send("p PING")
        XCTAssertEqual(try idle.readLine(), "p OK PONG")
    }
}
