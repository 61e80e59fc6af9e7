import SyncCore
import XCTest

@testable import ServerKit

/// The per-batch buffer the hub shares between subscribers: suffixes for subscribers that
/// already have some changes, and cuts at whole lines for a subscriber near its output limit;
/// the changes of a delivery are the ones its bytes are made of.
final class ChangeRunTests: XCTestCase {
    private func run(seqs: ClosedRange<Int64>) -> (ChangeRun, [String]) {
        let run = ChangeRun(collection: "c")
        var texts: [String] = []
        for seq in seqs {
            let change = Change(collection: "c", seq: seq, state: RecordState(id: "r\(seq)", rev: 1, body: .deleted))
            run.append(change)
            texts.append(change.line)
        }
        return (run, texts)
    }

    private func text(_ delivery: ChangeDelivery) -> String { String(decoding: delivery.bytes, as: UTF8.self) }

    func testSubscriberGetsOnlyTheChangesItHasNotSeen() {
        let (run, texts) = run(seqs: 5...8)
        let whole = run.delivery(after: 0, within: 1 << 20).0
        XCTAssertEqual(text(whole), texts.joined())
        XCTAssertEqual(whole.changes.map(\.seq), [5, 6, 7, 8], "the whole run")
        let rest = run.delivery(after: 6, within: 1 << 20).0
        XCTAssertEqual(text(rest), texts[2...].joined())
        XCTAssertEqual(rest.changes.map(\.seq), [7, 8])
        XCTAssertTrue(run.delivery(after: 8, within: 1 << 20).0.bytes.isEmpty)
        XCTAssertEqual(run.lastSeq, 8)
    }

    func testOutputNearTheLimitIsCutAtAWholeLine() {
        let (run, texts) = run(seqs: 1...4)
        let budget = texts[0].utf8.count + texts[1].utf8.count + 3
        let (delivery, complete) = run.delivery(after: 0, within: budget)
        XCTAssertFalse(complete)
        XCTAssertEqual(text(delivery), texts[0] + texts[1])
        XCTAssertEqual(delivery.changes.map(\.seq), [1, 2])
        let (none, noneComplete) = run.delivery(after: 0, within: -10)
        XCTAssertTrue(none.bytes.isEmpty)
        XCTAssertFalse(noneComplete)
    }
}
