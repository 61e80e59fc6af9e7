import XCTest
@testable import SyncCore

/// What the log keeps as changes age: all for a day, a record's latest of each hour for a week,
/// of each day until --history-days, then only each record's latest; chains skip what went.
final class HistoryRetentionTests: XCTestCase {
    private let day: Int64 = 86_400

    func testTheTiersFollowTheAgeOfTheChanges() {
        let now: Int64 = 100 * 86_400 + 1_800
        let retention = HistoryRetention(now: now, keepSeconds: 30 * day)
        XCTAssertEqual(retention.cutoff, now - 30 * day)
        XCTAssertEqual(retention.tiers.count, 2)
        XCTAssertEqual(retention.tiers[0].bucket, 3600)
        XCTAssertEqual(retention.tiers[0].from, now - 7 * day)
        XCTAssertEqual(retention.tiers[0].to, 99 * day, "up to the hour a day ago: whole hours only")
        XCTAssertEqual(retention.tiers[1].bucket, day)
        XCTAssertEqual(retention.tiers[1].from, retention.cutoff)
        XCTAssertEqual(retention.tiers[1].to, 93 * day, "whole days only")
        XCTAssertEqual(HistoryRetention(now: now, keepSeconds: 3 * day).tiers.map(\.bucket), [3600], "no daily tier inside three days")
        XCTAssertEqual(HistoryRetention(now: now, keepSeconds: day / 2).tiers.count, 0, "kept less than a day: nothing thinned, only cut")
    }

    func testALatestChangeOfEachBucketStaysAndTheChainSkipsTheRest() {
        let hour: Int64 = 3600
        let entries = [
            HistoryRetention.Entry(seq: 1, collection: "c", id: "a", at: 10, previous: nil),
            HistoryRetention.Entry(seq: 2, collection: "c", id: "b", at: 20, previous: nil),
            HistoryRetention.Entry(seq: 3, collection: "c", id: "a", at: 30, previous: 1),
            HistoryRetention.Entry(seq: 4, collection: "c", id: "a", at: hour + 5, previous: 3),
            HistoryRetention.Entry(seq: 5, collection: "c", id: "a", at: hour + 6, previous: 4),
            HistoryRetention.Entry(seq: 6, collection: "d", id: "a", at: hour + 7, previous: nil),
            HistoryRetention.Entry(seq: 7, collection: "c", id: "a", at: hour + 8, previous: 5),
        ]
        let (drop, relink) = HistoryRetention.thin(entries, bucket: hour)
        XCTAssertEqual(drop, [1, 4, 5], "a's latest of the first hour is 3, of the second 7; b and the other collection's a are alone")
        XCTAssertEqual(relink.map(\.seq), [3, 7])
        XCTAssertEqual(relink.map(\.previous), [nil, 3], "7's chain goes on at 3, its hour before")
    }
}
