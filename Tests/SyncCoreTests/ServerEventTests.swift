import SyncProtocol
import XCTest
@testable import SyncCore

final class ServerEventTests: XCTestCase {
    private func event(_ text: String) throws -> ServerEvent {
        ServerEvent(try ServerLine.parse(Array(text.utf8)))
    }

    func testChangesLiveAndDeleted() throws {
        XCTAssertEqual(try event(#"* CHANGE c 9 "Ada L" 3 a0 {"n":1}"#),
                       .change(collection: "c", seq: 9, id: "Ada L", state: RemoteState(rev: 3, position: "a0", fields: ["n": .integer(1)])))
        XCTAssertEqual(try event("* CHANGE c 10 Ada 4 - DELETED"),
                       .change(collection: "c", seq: 10, id: "Ada", state: RemoteState(rev: 4, position: nil, fields: nil)))
    }

    func testConflictRepliesCarryTheState() throws {
        XCTAssertEqual(try event(#"t ERR CONFLICT c Ada 2 a0 {"n":2}"#),
                       .error(tag: "t", code: .conflict, message: #"c Ada 2 a0"#, conflict: RemoteState(rev: 2, position: "a0", fields: ["n": .integer(2)])))
        XCTAssertEqual(try event("t ERR CONFLICT c Ada 0 - MISSING"),
                       .error(tag: "t", code: .conflict, message: "c Ada 0 - MISSING", conflict: RemoteState(rev: 0, position: nil, fields: nil)))
        XCTAssertEqual(try event("t ERR FORBIDDEN no"), .error(tag: "t", code: .forbidden, message: "no", conflict: nil))
        // A code from a newer server is an INTERNAL error that keeps the code in its message.
        XCTAssertEqual(try event("t ERR SHARD_MOVED try node 2"), .error(tag: "t", code: .internal, message: "SHARD_MOVED try node 2", conflict: nil))
    }

    func testCollectionsByeAndOk() throws {
        XCTAssertEqual(try event("* COLLECTION c write 4"), .collection(name: "c", role: .write, seq: 4))
        XCTAssertEqual(try event("* COLLECTION c none 4"), .collection(name: "c", role: nil, seq: 4))
        XCTAssertEqual(try event("* BYE SLOW"), .bye(.slow))
        XCTAssertEqual(try event("* BYE MOVED elsewhere"), .bye(ByeReason(rawValue: "MOVED")))
        XCTAssertEqual(try event("t OK PUT c Ada 1 5"), .ok(tag: "t", reply: .written(.put, collection: "c", id: "Ada", rev: 1, seq: 5), payload: nil))
        XCTAssertEqual(try event("t OK WARP 9"), .ok(tag: "t", reply: .other(["WARP", "9"]), payload: nil))
    }
}
