import AgentDecisions
import SyncCore
import XCTest

/// The mass-delete rules: when deletes are held, and what a look at them decides.
final class DeleteHoldTests: XCTestCase {
    private let now = 1_000.0

    func testDeletesPastTheLimitWithinTheWindowAreHeld() {
        var recent = Array(repeating: now - 5, count: 90) + Array(repeating: now - 30, count: 50)
        XCTAssertFalse(DeleteHold.isMassDelete(recent: &recent, adding: 10, now: now, limit: 100, window: 10))
        XCTAssertEqual(recent.count, 90, "deletes older than the window are forgotten")
        XCTAssertTrue(DeleteHold.isMassDelete(recent: &recent, adding: 11, now: now, limit: 100, window: 10))
        XCTAssertFalse(DeleteHold.isMassDelete(recent: &recent, adding: 10_000, now: now, limit: 0, window: 10), "0: never held")
    }

    func testALookAtHeldDeletes() {
        let held: Set<RecordID> = ["a", "b", "c"]
        let backHere: Set<RecordID> = ["b"]
        let missing = held.subtracting(backHere)
        XCTAssertEqual(DeleteHold.look(held: held, stillMissing: missing, request: nil, subscribed: true), .keepHolding(["a", "c"]),
                       "a file that came back leaves the hold")
        XCTAssertEqual(DeleteHold.look(held: held, stillMissing: missing, request: .confirm, subscribed: true), .confirm(["a", "c"]))
        XCTAssertEqual(DeleteHold.look(held: held, stillMissing: missing, request: .undo, subscribed: true), .undo(["a", "c"]))
        XCTAssertEqual(DeleteHold.look(held: held, stillMissing: [], request: nil, subscribed: true), .release)
        XCTAssertEqual(DeleteHold.look(held: held, stillMissing: missing, request: nil, subscribed: false), .release,
                       "a collection no longer mirrored holds nothing")
    }
}
