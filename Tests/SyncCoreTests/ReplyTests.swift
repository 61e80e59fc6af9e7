import SyncCore
import SyncProtocol
import XCTest

/// Every OK reply the server writes reads back as the same `Reply` (issue 19: no client reads a
/// reply by the position of its words).
final class ReplyTests: XCTestCase {
    private func readBack(_ reply: Reply, payload: String? = nil) throws -> (Reply, Fields?) {
        let line = reply.line("t", payload: payload)
        XCTAssertTrue(line.hasSuffix("\n"))
        guard case .ok(let tag, let read, let fields) = ServerEvent(try ServerLine.parse(Array(line.dropLast().utf8))) else {
            throw ProtocolError(.badRequest, "not an OK: \(line)")
        }
        XCTAssertEqual(tag, "t")
        return (read, fields)
    }

    func testEveryReplyReadsBackAsItself() throws {
        let replies: [Reply] = [
            .hello(version: "1", serverID: "4f1c"), .auth(user: "alice"), .auth(user: "Ada Lovelace"),
            .written(.put, collection: "c", id: "desk lamp", rev: 2, seq: 9), .written(.move, collection: "c", id: "a", rev: 3, seq: 10),
            .written(.delete, collection: "c", id: "a", rev: 4, seq: 11), .record(collection: "c", id: "a", rev: 4, position: nil),
            .listed(collection: "c", count: 3, seq: 12), .subscribed(collection: "c~conflicts", through: 0), .unsubscribed(collection: "c"),
            .created("c"), .dropped("c"), .renamed(from: "c", to: "d"), .granted, .collections(count: 2), .members(collection: "c", count: 3), .token("Zm9vYmFy"),
            .tokens(count: 4), .tokenRevoked, .pong, .bye, .whoami(user: "Ada L", isAdmin: false), .whoami(user: "root", isAdmin: true),
            .versions(collection: "c", id: "desk lamp", count: 3), .logged(collection: "c", count: 7),
            .reverted(collection: "c", written: 3, kept: 1, dryRun: false), .reverted(collection: "c", written: 0, kept: 0, dryRun: true),
            .account(.added, user: "bob"), .account(.passwordSet, user: "bob"), .account(.removed, user: "bob"),
            .account(.admin(true), user: "bob"), .account(.admin(false), user: "bob"), .users(count: 3), .passwordChanged,
            .other(["WARP", "9"]),
        ]
        for reply in replies {
            XCTAssertEqual(try readBack(reply).0, reply, reply.line("t"))
        }
    }

    /// A write's OK is built without its words (the hot path of every write): the same line.
    func testAWritesLineIsItsWordsLine() {
        for reply: Reply in [.written(.put, collection: "c", id: "desk lamp", rev: 2, seq: 9), .written(.move, collection: "c~conflicts", id: "a", rev: 3, seq: 10),
                             .written(.delete, collection: "c", id: "Zo\u{0065}\u{0308}", rev: 4, seq: 11), .written(.put, collection: "c", id: "{x", rev: 1, seq: 1)] {
            XCTAssertEqual(reply.line("t"), ResponseLine.ok("t", words: reply.words))
        }
    }

    func testPayloadsTravelBesideTheReply() throws {
        let (record, fields) = try readBack(.record(collection: "c", id: "Ada", rev: 2, position: "a0"), payload: #"{"n":2}"#)
        XCTAssertEqual(record, .record(collection: "c", id: "Ada", rev: 2, position: "a0"))
        XCTAssertEqual(fields, ["n": .integer(2)])
        let (hello, limits) = try readBack(.hello(version: "1", serverID: "id"), payload: #"{"max_line_bytes":1048576}"#)
        XCTAssertEqual(hello, .hello(version: "1", serverID: "id"))
        XCTAssertEqual(limits?["max_line_bytes"], .integer(1_048_576))
        XCTAssertEqual(try readBack(.stats, payload: #"{"seq":5}"#).1?["seq"], .integer(5))
    }

    func testAReplyWithMissingOrBadWordsIsKeptAsOther() {
        XCTAssertEqual(Reply(words: ["PUT", "c", "a", "x", "1"]), .other(["PUT", "c", "a", "x", "1"]))
        XCTAssertEqual(Reply(words: ["SUB", "c"]), .other(["SUB", "c"]))
    }
}
