import Foundation
import SQLiteStore
import SyncCore
import XCTest

/// Issue 30: a LIST on SQLite is stepped a page at a time from a snapshot of its own; the
/// snapshots open at once are capped (each holds back the write-ahead log's recycling).
final class SQLiteListingTests: XCTestCase {
    private var folder: String!
    private var store: SQLiteServerStore!

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "plistsync-listing-" + UUID().uuidString
        store = try SQLiteServerStore(folder: DataFolder(path: folder))
        var operations: [StoreOperation] = [.createCollection(name: "c", owner: "ann")]
        for index in 0..<1_000 { operations.append(.put(collection: "c", id: String(format: "r%04d", index), baseRev: 0, fieldsJSON: "{\"n\":\(index)}")) }
        _ = try store.commit(operations)
    }

    override func tearDown() {
        store = nil
        try? FileManager.default.removeItem(atPath: folder)
    }

    func testAListingIsOneSnapshotReadAPageAtATime() throws {
        let listing = try store.listing("c")
        XCTAssertTrue(listing is SQLiteListing)
        let first = try listing.next(300)
        XCTAssertEqual(first.map(\.id).prefix(2), ["r0000", "r0001"])
        // Written after the listing began: not in it.
        let outcomes = try store.commit([.delete(collection: "c", id: "r0500", baseRev: 1), .put(collection: "c", id: "r9999", baseRev: 0, fieldsJSON: "{}")])
        XCTAssertEqual(outcomes.count, 2)
        var ids = first.map(\.id)
        while true {
            let page = try listing.next(300)
            ids += page.map(\.id)
            if page.count < 300 { break }
        }
        XCTAssertEqual(ids, (0..<1_000).map { String(format: "r%04d", $0) })
        XCTAssertEqual(try store.listing("c").next(2_000).count, 1_000, "a listing begun after the writes has them")
    }

    func testSnapshotsPastTheCapAreReadWhole() throws {
        var open: [any RecordListing] = []
        for _ in 0..<SQLiteListing.maxOpen { open.append(try store.listing("c")) }
        XCTAssertTrue(open.allSatisfy { $0 is SQLiteListing })
        let extra = try store.listing("c")
        XCTAssertTrue(extra is WholeListing)
        XCTAssertEqual(try extra.next(2_000).count, 1_000)
        // One that ran to its end gives its snapshot back.
        XCTAssertEqual(try open[0].next(2_000).count, 1_000)
        XCTAssertTrue(try store.listing("c") is SQLiteListing)
    }
}
