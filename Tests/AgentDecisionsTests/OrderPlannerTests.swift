import SyncCore
import XCTest

import AgentDecisions
import SyncCore

/// The moves an order-file edit turns into, against the order on the server now.
final class OrderPlannerTests: XCTestCase {
    private func plan(_ base: [String], _ desired: [String], _ current: [String]) -> [String] {
        OrderPlanner.moves(from: base.recordIDs, to: desired.recordIDs, current: current.recordIDs).map { move in
            switch move.placement {
            case .first: "\(move.id) FIRST"
            case .last: "\(move.id) LAST"
            case .after(let other): "\(move.id) AFTER \(other)"
            case .before(let other): "\(move.id) BEFORE \(other)"
            }
        }
    }

    func testOnlyTheRowsTheUserMovedMove() {
        XCTAssertEqual(plan(["a", "b", "c", "d"], ["a", "c", "b", "d"], ["a", "b", "c", "d"]), ["c AFTER a"])
        XCTAssertEqual(plan(["a", "b", "c", "d"], ["d", "a", "b", "c"], ["a", "b", "c", "d"]), ["d FIRST"])
        XCTAssertEqual(plan(["a", "b", "c", "d"], ["b", "c", "d", "a"], ["a", "b", "c", "d"]), ["a LAST"])
        XCTAssertEqual(plan(["a", "b"], ["a", "b"], ["b", "a"]), [])
    }

    func testAnotherPersonsMoveIsNotUndone() {
        // Someone moved d to the top meanwhile; this user moved a after c.
        XCTAssertEqual(plan(["a", "b", "c", "d", "e"], ["b", "c", "a", "d", "e"], ["d", "a", "b", "c", "e"]), ["a AFTER c"])
        // This user's anchor (d) was moved by someone else: the next steady neighbour serves.
        XCTAssertEqual(plan(["a", "b", "c", "d", "e"], ["b", "c", "d", "a", "e"], ["d", "a", "b", "c", "e"]), ["a AFTER c"])
    }

    func testARowBothMovedStaysWhereTheOtherPersonPutIt() {
        // Someone moved a after c meanwhile; this user moved a to the bottom.
        XCTAssertEqual(plan(["a", "b", "c", "d"], ["b", "c", "d", "a"], ["b", "c", "a", "d"]), [])
        // The same, and this user moved c to the top as well: that move still goes.
        XCTAssertEqual(plan(["a", "b", "c", "d", "e"], ["c", "b", "d", "e", "a"], ["b", "c", "d", "a", "e"]), ["c FIRST"])
    }

    func testRowsGoneOrUnknownToTheBase() {
        // x was deleted on the server; y was added there and listed by the user.
        XCTAssertEqual(plan(["a", "b", "x"], ["x", "b", "a"], ["a", "b", "y"]), ["b FIRST"])
        XCTAssertEqual(plan(["a", "b"], ["y", "a", "b"], ["a", "b", "y"]), ["y FIRST"])
    }
}
