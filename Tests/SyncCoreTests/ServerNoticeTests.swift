import SyncProtocol
import XCTest
@testable import SyncCore

/// Every server line the server encodes reads back as the event a client expects.
final class ServerNoticeTests: XCTestCase {
    private func read(_ notice: ServerNotice) throws -> ServerEvent {
        let line = notice.line
        XCTAssertTrue(line.hasSuffix("\n") && !line.dropLast().contains("\n"), line)
        return ServerEvent(try ServerLine.parse(Array(line.dropLast().utf8)))
    }

    func testEveryNoticeReadsBackAsItsEvent() throws {
        XCTAssertEqual(try read(.collection(name: "inv", role: .write, seq: 7)), .collection(name: "inv", role: .write, seq: 7))
        XCTAssertEqual(try read(.collection(name: "inv", role: nil, seq: 0)), .collection(name: "inv", role: nil, seq: 0))
        XCTAssertEqual(try read(.record(collection: "c", state: RecordState(id: "desk lamp", rev: 2, body: .live(position: "a0", fieldsJSON: #"{"n":1}"#)))),
                       .record(collection: "c", id: "desk lamp", state: RemoteState(rev: 2, position: "a0", fields: ["n": .integer(1)])))
        XCTAssertEqual(try read(.dropped("old")), .dropped("old"))
        XCTAssertEqual(try read(.renamed(from: "a", to: "b")), .renamed(from: "a", to: "b"))
        XCTAssertEqual(try read(.bye(.revoked)), .bye(.revoked))
        XCTAssertEqual(try read(.bye(.tlsRequired, detail: "this port speaks TLS")), .bye(.tlsRequired))
    }

    func testTheLinesWithoutADedicatedEventKeepTheirWordsAndTokensReadBack() throws {
        guard case .other(let unsub) = try read(.unsubscribedRevoked("c")) else { return XCTFail("UNSUB") }
        XCTAssertEqual(unsub.words, ["UNSUB", "c", "REVOKED"])
        guard case .other(let member) = try read(.member(user: "bob", role: .write)) else { return XCTFail("MEMBER") }
        XCTAssertEqual(member.words, ["MEMBER", "bob", "write"])
        let version = RecordVersion(rev: 2, fieldsJSON: #"{"n":1}"#, replacedAt: 86_400)
        guard case .other(let versionLine) = try read(.version(collection: "c", id: "desk lamp", version)) else { return XCTFail("VERSION") }
        XCTAssertEqual(versionLine.words, ["VERSION", "c", "desk lamp", "2", "1970-01-02T00:00:00Z", "-", "-", "-", "-"])
        XCTAssertEqual(versionLine.fields, ["n": .integer(1)])
        let author = LoggedAuthor(user: "bob", device: "abababababab", deviceLabel: "bob's laptop", via: "agent")
        let logged = LoggedChange(collection: "c", seq: 7, state: RecordState(id: "desk lamp", rev: 3, body: .deleted), author: author, at: 86_400)
        guard case .other(let logLine) = try read(.logged(logged)) else { return XCTFail("LOG") }
        XCTAssertEqual(logLine.words, ["LOG", "c", "7", "1970-01-02T00:00:00Z", "bob", "abababababab", "bob's laptop", "agent", "desk lamp", "3", "-", "DELETED"])
        guard case .other(let revertLine) = try read(.revertStep(collection: "c", RecordState(id: "a", rev: 4, body: .live(position: "a0", fieldsJSON: "{}")))) else {
            return XCTFail("REVERT")
        }
        XCTAssertEqual(revertLine.words, ["REVERT", "c", "a", "4", "a0"])
        guard case .other(let kept) = try read(.revertKept(collection: "c", id: "a", rev: 5, by: author)) else { return XCTFail("KEPT") }
        XCTAssertEqual(kept.words, ["KEPT", "c", "a", "5", "bob", "abababababab", "bob's laptop", "agent"])
        let token = TokenInfo(hash: String(repeating: "ab", count: 32), user: "alice", label: "alice's laptop", createdAt: 0, lastUsedAt: nil)
        XCTAssertEqual(try read(.token(token, isThisConnection: true)),
                       .token(TokenListing(id: "abababababab", created: "1970-01-01T00:00:00Z", lastUsed: nil, isThisConnection: true, label: "alice's laptop")))
    }
}
