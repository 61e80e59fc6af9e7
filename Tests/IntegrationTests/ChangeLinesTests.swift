import SyncCore
import XCTest

@testable import ServerKit

/// The per-batch buffer the hub shares between subscribers: suffixes for subscribers that
/// already have some changes, and cuts at whole lines for a subscriber near its output limit.
final class ChangeLinesTests: XCTestCase {
    private func lines(seqs: ClosedRange<Int64>) -> (ChangeLines, [String]) {
        var lines = ChangeLines()
        var texts: [String] = []
        for seq in seqs {
            let change = Change(collection: "c", seq: seq, state: RecordState(id: "r\(seq)", rev: 1, body: .deleted))
            lines.append(change)
            texts.append(change.line)
        }
        return (lines, texts)
    }

    func testSubscriberGetsOnlyTheChangesItHasNotSeen() {
        let (lines, texts) = lines(seqs: 5...8)
        XCTAssertEqual(String(decoding: lines.lines(after: 0, within: 1 << 20).bytes, as: UTF8.self), texts.joined())
        XCTAssertEqual(String(decoding: lines.lines(after: 6, within: 1 << 20).bytes, as: UTF8.self), texts[2...].joined())
        XCTAssertTrue(lines.lines(after: 8, within: 1 << 20).bytes.isEmpty)
        XCTAssertEqual(lines.lastSeq, 8)
    }

    func testOutputNearTheLimitIsCutAtAWholeLine() {
        let (lines, texts) = lines(seqs: 1...4)
        let budget = texts[0].utf8.count + texts[1].utf8.count + 3
        let (bytes, complete) = lines.lines(after: 0, within: budget)
        XCTAssertFalse(complete)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), texts[0] + texts[1])
        let (none, noneComplete) = lines.lines(after: 0, within: -10)
        XCTAssertTrue(none.isEmpty)
        XCTAssertFalse(noneComplete)
    }
}
