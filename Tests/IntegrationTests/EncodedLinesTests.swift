import Foundation
import SQLiteStore
import SyncCore
import SyncProtocol
import XCTest

/// LIST and SUB replay pages written straight from SQLite's rows are the very bytes the values
/// would have been written as: ids quoted where they must be, tombstones, every page.
final class EncodedLinesTests: XCTestCase {
    func testLinesWrittenFromRowsAreTheLinesOfTheValues() throws {
        let path = NSTemporaryDirectory() + "plistsync-lines-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let store = try SQLiteServerStore(folder: DataFolder(path: path))
        XCTAssertEqual(try store.commit([.createCollection(name: "c", owner: "alice")]), [.done])
        let ids = ["plain", "desk lamp", "{brace", "Zoe\u{0308}", "quote\"d", "tab\there", "💾", "a", "x{"]
        _ = try store.commit(ids.enumerated().map { index, id in
            .put(collection: "c", id: id, baseRev: 0, fieldsJSON: #"{"n":\#(index),"s":"é \"q\""}"#)
        })
        _ = try store.commit([.delete(collection: "c", id: "a", baseRev: 1), .put(collection: "c", id: "plain", baseRev: 1, fieldsJSON: "{}")])

        let listing = try store.listing("c")
        var written: [UInt8] = []
        var count = 0
        while true {
            let page = try listing.nextLines(3, collection: "c")
            written += page.bytes
            count += page.count
            if page.count < 3 { break }
        }
        let records = try store.list("c").records
        XCTAssertEqual(count, records.count)
        XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: EncodedLines(records: records, collection: "c").bytes, as: UTF8.self))

        let replay = try XCTUnwrap(try store.changeLines("c", since: 0, limit: 100))
        let values = try XCTUnwrap(try store.changes("c", since: 0, limit: 100))
        XCTAssertEqual(replay.seq, values.seq)
        XCTAssertEqual(replay.lines.count, ids.count)
        XCTAssertEqual(replay.lines.lastSeq, values.changes.last?.seq)
        XCTAssertEqual(String(decoding: replay.lines.bytes, as: UTF8.self), String(decoding: EncodedLines(changes: values.changes).bytes, as: UTF8.self))
        XCTAssertTrue(String(decoding: replay.lines.bytes, as: UTF8.self).contains("* CHANGE c 10 a 2 - DELETED\n"))
    }
}
