import AgentDecisions
import PlistSyncTesting
import SyncCore
import SyncProtocol
import XCTest

/// Issue 18, item 5: ids that differ only in Unicode normalisation are different ids in every
/// rule that keys, compares or orders them.
final class RecordIDTests: XCTestCase {
    let composed = "Zo\u{00EB}"
    let decomposed = "Zoe\u{0308}"

    func testTwinsAreEqualStringsButDifferentIDs() {
        XCTAssertEqual(composed, decomposed, "Swift's String equality is canonical equivalence")
        XCTAssertNotEqual(RecordID(composed), RecordID(decomposed))
        XCTAssertEqual(Set([RecordID(composed), RecordID(decomposed), RecordID(composed)]).count, 2)
        XCTAssertEqual([RecordID(composed): 1, RecordID(decomposed): 2][RecordID(decomposed)], 2)
        XCTAssertTrue(RecordID(decomposed) < RecordID(composed), "byte order: 'e' (0x65) before 0xC3")
    }

    func testAMoveNextToOneTwinLandsNextToThatTwin() {
        XCTAssertEqual(Placement.after(decomposed).index(among: ["a", composed, "b", decomposed, "c"]), 4)
        XCTAssertEqual(Placement.before(decomposed).index(among: [composed, decomposed]), 1)
        let states = LocalRekey.states(moving: composed, baseRev: 3, fieldsJSON: "{}", between: "a1", nil,
                                       in: SortedNeighbours(keys: [(decomposed, "a0"), ("a", "a1")]))
        XCTAssertEqual(states.map { Array($0.id.utf8) }, [decomposed, "a", composed].map { Array($0.utf8) },
                       "the other twin is re-keyed too, and the moved one comes last")
    }

    func testTheOrderPlannerMovesOnlyTheTwinThatMoved() {
        let base: [RecordID] = [RecordID(composed), RecordID(decomposed), "a", "b", "c"]
        let desired: [RecordID] = [RecordID(decomposed), "a", "b", "c", RecordID(composed)]
        let moves = OrderPlanner.moves(from: base, to: desired, current: base)
        XCTAssertEqual(moves.count, 1, "\(moves)")
        XCTAssertEqual(moves.first?.id, RecordID(composed))
        XCTAssertEqual(moves.first?.placement, .last)
    }

    func testAnAppSaveOfTwinRowsWritesTheOneThatChanged() {
        let row: (String) -> Fields = { ["v": .string($0)] }
        let versions = [AppFileVersion(records: [RecordID(composed): row("1"), RecordID(decomposed): row("2")],
                                       order: [RecordID(composed), RecordID(decomposed)], byApp: true)]
        let save = AppFileSave.read([(RecordID(composed), row("1")), (RecordID(decomposed), row("2, edited"))], versions: versions,
                                    latestOrder: versions[0].order, shadow: versions[0].records)
        XCTAssertEqual(save.writes.map(\.id), [RecordID(decomposed)])
        XCTAssertEqual(save.removes, [])
        XCTAssertNil(save.order)
    }
}
