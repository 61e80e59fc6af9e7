@testable import ServerKit
import SyncCore
import XCTest

final class FeedSequencerTests: XCTestCase {
    private func change(_ seq: Int64, _ collection: String = "c") -> Change {
        Change(collection: collection, seq: seq, state: RecordState(id: "r\(seq)", rev: 1, body: .deleted))
    }

    func testOwnCommitsInOrderGoStraightOut() {
        var feed = FeedSequencer(deliveredThrough: 10)
        XCTAssertEqual(feed.add([change(11), change(12)]).map(\.seq), [11, 12])
        XCTAssertNil(feed.missing)
        XCTAssertEqual(feed.deliveredThrough, 12)
    }

    func testACommitAfterAnotherNodesIsHeldUntilTheGapIsRead() {
        var feed = FeedSequencer(deliveredThrough: 10)
        // Another node committed 11…13 first; this node's batch is 14…15.
        XCTAssertEqual(feed.add([change(14), change(15)]), [])
        XCTAssertEqual(feed.missing, 11...13)
        XCTAssertEqual(feed.add([change(11), change(12), change(13)]).map(\.seq), [11, 12, 13, 14, 15])
        XCTAssertNil(feed.missing)
    }

    func testANoticeAsksForTheChangesUpToIt() {
        var feed = FeedSequencer(deliveredThrough: 5)
        feed.committed(through: 8)
        XCTAssertEqual(feed.missing, 6...8)
        // Only part visible yet: what is in order goes out, the rest stays missing.
        XCTAssertEqual(feed.add([change(6)]).map(\.seq), [6])
        XCTAssertEqual(feed.missing, 7...8)
        // A stale notice changes nothing.
        feed.committed(through: 3)
        XCTAssertEqual(feed.missing, 7...8)
    }

    func testDuplicatesAndOldChangesAreNeverSentTwice() {
        var feed = FeedSequencer(deliveredThrough: 0)
        XCTAssertEqual(feed.add([change(1), change(2)]).map(\.seq), [1, 2])
        XCTAssertEqual(feed.add([change(2), change(1), change(3)]).map(\.seq), [3])
    }

    func testSkippingAPrunedRangeReleasesWhatFollows() {
        var feed = FeedSequencer(deliveredThrough: 0)
        _ = feed.add([change(9), change(10)])
        XCTAssertEqual(feed.missing, 1...8)
        XCTAssertEqual(feed.skip(through: 8).map(\.seq), [9, 10])
        XCTAssertNil(feed.missing)
    }
}

final class ClusterEventTests: XCTestCase {
    func testEveryKindRoundTrips() {
        let kinds: [ClusterEvent.Kind] = [
            .committed(throughSeq: 42), .created(collection: "contacts", owner: "alice"), .dropped(collection: "old"),
            .renamed(from: "a", to: "b"), .granted(collection: "c", user: "bob", role: .write), .granted(collection: "c", user: "bob", role: nil),
            .tokenRevoked(hash: "ab12"), .accountsChanged,
        ]
        for kind in kinds {
            let event = ClusterEvent(node: "n1", kind)
            XCTAssertEqual(ClusterEvent(payload: event.payload), event, event.payload)
        }
        XCTAssertEqual(ClusterEvent(node: "n1", .granted(collection: "c", user: "bob", role: .read)).payload, "g n1 c bob read")
    }

    func testUnknownOrMalformedPayloadsAreRefused() {
        for payload in ["", "c", "c n1", "c n1 x", "z n1", "g n1 c bob owner", "d n1 a b"] {
            XCTAssertNil(ClusterEvent(payload: payload), payload)
        }
    }

    func testOnlyAdministrativeOperationsMakeEvents() {
        XCTAssertEqual(ClusterEvent.after(.dropCollection(name: "x"), node: "n")?.kind, .dropped(collection: "x"))
        XCTAssertNil(ClusterEvent.after(.put(collection: "c", id: "i", baseRev: 0, fieldsJSON: "{}"), node: "n"))
        XCTAssertNil(ClusterEvent.after(.touchToken(hash: "h", at: 1), node: "n"))
    }
}
