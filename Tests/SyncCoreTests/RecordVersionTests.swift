import XCTest
@testable import SyncCore

/// Which replaced states are kept as versions: changed fields that lived at least the minimum
/// age; never a MOVE's, never a state from a burst of saves.
final class RecordVersionTests: XCTestCase {
    private let old = RecordState(id: "a", rev: 1, body: .live(position: "a0", fieldsJSON: #"{"n":1}"#))

    private func kept(_ next: RecordState, writtenAt: Int64? = 0, now: Int64 = 100, minimumAge: Int64 = 60, previous: RecordState? = nil) -> Bool {
        RecordVersion.isKept(replacing: previous ?? old, writtenAt: writtenAt, with: next, at: now, minimumAge: minimumAge)
    }

    func testChangedFieldsThatLivedLongEnoughAreKept() {
        XCTAssertTrue(kept(RecordState(id: "a", rev: 2, body: .live(position: "a0", fieldsJSON: #"{"n":2}"#))))
        XCTAssertTrue(kept(RecordState(id: "a", rev: 2, body: .deleted)), "a delete keeps what it deleted")
    }

    func testABurstAMoveOrATombstoneKeepsNothing() {
        let changed = RecordState(id: "a", rev: 2, body: .live(position: "a0", fieldsJSON: #"{"n":2}"#))
        XCTAssertFalse(kept(changed, writtenAt: 50), "lived 50 s of the 60 asked")
        XCTAssertTrue(kept(changed, writtenAt: 50, minimumAge: 0), "every state, when asked")
        XCTAssertFalse(kept(changed, writtenAt: nil), "written in this very batch")
        XCTAssertFalse(kept(RecordState(id: "a", rev: 2, body: .live(position: "Zz", fieldsJSON: #"{"n":1}"#))), "a MOVE keeps the fields")
        XCTAssertFalse(kept(changed, previous: RecordState(id: "a", rev: 1, body: .deleted)), "a tombstone has no fields to keep")
    }
}
