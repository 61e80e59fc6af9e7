import PlistSyncTesting
import SyncCore
import SyncProtocol
import XCTest

final class PlacementBoundsTests: XCTestCase {
    private let others = SortedNeighbours(keys: [("a", "a0"), ("b", "a1"), ("c", "a2")])

    func testEachPlacementNamesItsNeighbours() {
        XCTAssertEqual(Placement.first.bounds(moving: "x", of: "c", in: others), .between(lower: nil, upper: "a0"))
        XCTAssertEqual(Placement.last.bounds(moving: "x", of: "c", in: others), .between(lower: "a2", upper: nil))
        XCTAssertEqual(Placement.before("b").bounds(moving: "x", of: "c", in: others), .between(lower: "a0", upper: "a1"))
        XCTAssertEqual(Placement.after("b").bounds(moving: "x", of: "c", in: others), .between(lower: "a1", upper: "a2"))
        XCTAssertEqual(Placement.after("c").bounds(moving: "x", of: "c", in: others), .between(lower: "a2", upper: nil))
    }

    func testAnchorsThatCannotBeUsedAreRefused() {
        XCTAssertEqual(Placement.before("x").bounds(moving: "x", of: "list", in: others),
                       .refused(ProtocolError(.badRequest, "cannot move a record relative to itself")))
        XCTAssertEqual(Placement.after("gone").bounds(moving: "x", of: "list", in: others),
                       .refused(ProtocolError(.notFound, "no record \"gone\" in list")))
    }

    /// Simulation seed 7149 (the order-intent check): ids that differ only in Unicode
    /// normalisation are two records, so a move of one after the other is a move, not a move
    /// relative to itself (the check compared them as Swift strings, which are equal).
    func testARecordMovesAfterItsTwinSpelledInTheOtherNormalisation() {
        let twins = SortedNeighbours(keys: [("Zo\u{00EB}", "a0"), ("b", "a1")])
        XCTAssertEqual(Placement.after("Zo\u{00EB}").bounds(moving: "Zoe\u{0308}", of: "c", in: twins), .between(lower: "a0", upper: "a1"))
    }

    func testTheInsertionIndexFollowsTheAnchor() {
        XCTAssertEqual(Placement.first.index(among: ["a", "b"]), 0)
        XCTAssertEqual(Placement.last.index(among: ["a", "b"]), 2)
        XCTAssertEqual(Placement.before("b").index(among: ["a", "b"]), 1)
        XCTAssertEqual(Placement.after("a").index(among: ["a", "b"]), 1)
    }

    func testAPlanConflictsOnAStaleBaseAndRebalancesWhenNoShortKeyIsLeft() {
        let live = RecordState(id: "x", rev: 3, body: .live(position: "a5", fieldsJSON: "{}"))
        XCTAssertEqual(Placement.first.plan(moving: "x", of: "c", baseRev: 2, over: live, in: others), .conflict)
        XCTAssertEqual(Placement.first.plan(moving: "x", of: "c", baseRev: 3, over: nil, in: others), .conflict)
        guard case .place(let moved) = Placement.first.plan(moving: "x", of: "c", baseRev: 3, over: live, in: others),
            case .live(let key, _) = moved.body else { return XCTFail("not placed") }
        XCTAssertEqual(moved.rev, 4)
        XCTAssertLessThan(key, "a0")
        let crowded = SortedNeighbours(keys: [("a", "a0" + String(repeating: "0", count: PositionKey.maxLength)), ("b", "a0" + String(repeating: "0", count: PositionKey.maxLength) + "1")])
        XCTAssertEqual(Placement.before("b").plan(moving: "x", of: "c", baseRev: 3, over: live, in: crowded), .rebalance(fieldsJSON: "{}", lower: crowded.live[0].position, upper: crowded.live[1].position))
    }
}
