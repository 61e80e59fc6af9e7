import PlistSyncTesting
import SyncCore
import SyncProtocol
import XCTest

/// Issue 30: a crowded gap re-keys a few neighbours, never the whole collection.
final class LocalRekeyTests: XCTestCase {
    /// A collection's live records in key order, moved and re-keyed as a store would.
    private struct Collection {
        var records: [RecordState]

        /// Applies a MOVE; the states it wrote.
        mutating func move(_ id: String, _ placement: Placement) throws -> [RecordState] {
            let others = SortedNeighbours(records, moving: id)
            let current = records.first { $0.id == id }!
            let written: [RecordState]
            switch placement.plan(moving: id, of: "c", baseRev: current.rev, over: current, in: others) {
            case .place(let state): written = [state]
            case .rebalance(let fields, let lower, let upper):
                written = LocalRekey.states(moving: id, baseRev: current.rev, fieldsJSON: fields, between: lower, upper, in: others)
            case let other: throw XCTSkip("unexpected plan \(other)")
            }
            for state in written { records.removeAll { $0.id == state.id } }
            records += written
            records.sort { $0.position!.utf8.lexicographicallyPrecedes($1.position!.utf8) }
            return written
        }
    }

    private func collection(_ count: Int) throws -> Collection {
        let keys = try PositionKey.spread(count: count, between: nil, nil)
        return Collection(records: keys.enumerated().map { RecordState(id: "r\($0.offset)", rev: 1, body: .live(position: $0.element, fieldsJSON: "{}")) })
    }

    func testAThousandMovesIntoOneGapWriteAFewRecordsEachAndKeepTheOrder() throws {
        var list = try collection(500)
        var writes = 0, largest = 0
        for index in 0..<1000 {
            let written = try list.move(index % 2 == 0 ? "r498" : "r499", .before("r250"))
            writes += written.count
            largest = max(largest, written.count)
        }
        XCTAssertLessThanOrEqual(largest, 2 * LocalRekey.firstReach + 1, "a re-key takes a few neighbours, not the collection")
        XCTAssertLessThan(writes, 1100, "about one write a move")
        XCTAssertLessThanOrEqual(list.records.map { $0.position!.utf8.count }.max()!, PositionKey.maxLength)
        let expected = (0..<250).map { "r\($0)" } + ["r498", "r499"] + (250..<498).map { "r\($0)" }
        XCTAssertEqual(list.records.map(\.id), expected)
    }

    func testAReKeyRaisesTheRevOfEachRecordItMovesAndPutsTheMovedOneLast() throws {
        let crowded = "a0" + String(repeating: "V", count: PositionKey.maxLength)
        var list = Collection(records: [("a", "a0"), ("b", crowded), ("c", crowded + "V"), ("d", "a1")].map {
            RecordState(id: $0.0, rev: 3, body: .live(position: $0.1, fieldsJSON: "{\"n\":\"\($0.0)\"}"))
        })
        let written = try list.move("d", .after("b"))
        XCTAssertEqual(written.map(\.id), ["a", "b", "c", "d"], "open ends on both sides: all four, the moved one last")
        XCTAssertEqual(written.map(\.rev), [4, 4, 4, 4])
        XCTAssertEqual(written.map(\.fieldsJSON), ["{\"n\":\"a\"}", "{\"n\":\"b\"}", "{\"n\":\"c\"}", "{\"n\":\"d\"}"])
        XCTAssertEqual(list.records.map(\.id), ["a", "b", "d", "c"])
        XCTAssertTrue(list.records.allSatisfy { $0.position!.utf8.count <= PositionKey.respacedLength })
    }

    func testTheWindowWidensUntilItsKeysAreShort() throws {
        // Twenty records whose keys are all long: eight a side is not enough room.
        let keys = "123456789ABCDEFGHIJK".map { "a0" + String(repeating: "V", count: 30) + String($0) }
        var list = Collection(records: [RecordState(id: "head", rev: 1, body: .live(position: "a0", fieldsJSON: "{}"))]
            + keys.enumerated().map { RecordState(id: "k\($0.offset)", rev: 1, body: .live(position: $0.element, fieldsJSON: "{}")) }
            + [RecordState(id: "tail", rev: 1, body: .live(position: "a1", fieldsJSON: "{}"))])
        var crowdedUpper = keys[10]
        for _ in 0..<200 where crowdedUpper.utf8.count <= PositionKey.maxLength {
            crowdedUpper = try PositionKey.between(keys[9], crowdedUpper)
        }
        list.records[11] = RecordState(id: "k10", rev: 1, body: .live(position: crowdedUpper, fieldsJSON: "{}"))
        let written = try list.move("tail", .before("k10"))
        XCTAssertGreaterThan(written.count, 2 * LocalRekey.firstReach + 1)
        XCTAssertTrue(written.allSatisfy { $0.position!.utf8.count <= PositionKey.respacedLength }, "\(written.map(\.position))")
        XCTAssertEqual(list.records.map(\.id), ["head"] + (0..<10).map { "k\($0)" } + ["tail"] + (10..<20).map { "k\($0)" })
    }
}
