import SyncCore
import XCTest

/// The revision rules every store applies (issue 12, item 1: once, in SyncCore).
final class RevisionRulesTests: XCTestCase {
    private let live = RecordState(id: "ada", rev: 3, body: .live(position: "a0", fieldsJSON: #"{"n":1}"#))
    private let tombstone = RecordState(id: "ada", rev: 4, body: .deleted)

    func testAPutNeedsTheCurrentRevAndKeepsTheRecordsPlace() {
        XCTAssertEqual(RevisionRules.put(baseRev: 3, over: live), .update(rev: 4, position: "a0"))
        XCTAssertEqual(RevisionRules.put(baseRev: 2, over: live), .conflict, "a stale base")
        XCTAssertEqual(RevisionRules.put(baseRev: 0, over: live), .conflict, "creating what exists")
        XCTAssertEqual(RevisionRules.put(baseRev: 4, over: live), .conflict, "a base from the future")
    }

    func testAPutMakesANewRecordOnlyFromZero() {
        XCTAssertEqual(RevisionRules.put(baseRev: 0, over: nil), .create(rev: 1))
        XCTAssertEqual(RevisionRules.put(baseRev: 1, over: nil), .conflict)
    }

    func testAPutReCreatesOverATombstoneFromZeroOrFromTheTombstonesRev() {
        XCTAssertEqual(RevisionRules.put(baseRev: 0, over: tombstone), .create(rev: 5), "from scratch")
        XCTAssertEqual(RevisionRules.put(baseRev: 4, over: tombstone), .create(rev: 5), "someone who saw the delete")
        XCTAssertEqual(RevisionRules.put(baseRev: 3, over: tombstone), .conflict, "an edit of the version before the delete")
    }

    func testADeleteNeedsALiveRecordAtItsCurrentRev() {
        XCTAssertEqual(RevisionRules.delete(baseRev: 3, over: live), 4)
        XCTAssertNil(RevisionRules.delete(baseRev: 2, over: live))
        XCTAssertNil(RevisionRules.delete(baseRev: 4, over: tombstone), "already deleted")
        XCTAssertNil(RevisionRules.delete(baseRev: 0, over: nil))
    }

    func testAMoveNeedsALiveRecordAtItsCurrentRevAndKeepsItsFields() {
        let moved = RevisionRules.move(baseRev: 3, over: live)
        XCTAssertEqual(moved?.rev, 4)
        XCTAssertEqual(moved?.fieldsJSON, #"{"n":1}"#)
        XCTAssertNil(RevisionRules.move(baseRev: 2, over: live))
        XCTAssertNil(RevisionRules.move(baseRev: 4, over: tombstone))
    }
}
