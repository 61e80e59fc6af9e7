import Foundation
import SQLiteKit
@testable import SQLiteStore
import SyncCore
import SyncProtocol
import XCTest

/// Issue 47, item 1: a field edit commits as its logged change alone and its row is written
/// behind. Every read answers the same before the rows are written as after; a read begun
/// before they are written keeps its view; a move or delete writes the row at once; a start
/// writes the rows the log holds past `applied_seq`.
final class RowsBehindTests: XCTestCase {
    private var folder: DataFolder!
    private static let nfd = "Zoe\u{0308}"
    private static let nfc = "Zo\u{00EB}"

    override func setUpWithError() throws {
        let path = NSTemporaryDirectory() + "plistsync-behind-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        folder = DataFolder(path: path)
    }

    /// A store whose rows are written only when the test says, with collection `c` holding
    /// `a`, `b` and the twin ids, each then edited once (four edits waiting).
    private func storeWithWaitingEdits() throws -> (store: SQLiteServerStore, created: Int64) {
        let store = try SQLiteServerStore(folder: folder, rowsBehindAutomatically: false)
        var operations: [StoreOperation] = [.createCollection(name: "c", owner: "ann")]
        for id in ["a", "b", Self.nfd, Self.nfc] { operations.append(.put(collection: "c", id: id, baseRev: 0, fieldsJSON: #"{"v":"\#(id) 1"}"#)) }
        _ = try store.commit(operations)
        let created = try store.currentSeq()
        _ = try store.commit(["a", "b", Self.nfd, Self.nfc].map { .put(collection: "c", id: $0, baseRev: 1, fieldsJSON: #"{"v":"\#($0) 2"}"#) })
        return (store, created)
    }

    /// The rows as the file holds them, `id=fields` in id order, as bytes (Swift's `String`
    /// equality would take the twin ids for one).
    private func rows() throws -> [[UInt8]] {
        let db = try SQLiteDatabase(path: folder.storePath)
        return try db.query("SELECT id, fields FROM records WHERE collection = 'c' ORDER BY id") { Array("\($0.text(0) ?? "")=\($0.text(1) ?? "")".utf8) }
    }

    /// `id=fields` of the `n`th edit of each id, as `rows()` gives them.
    private func edited(_ ids: [String], _ n: Int) -> [[UInt8]] {
        ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { Array(#"\#($0)={"v":"\#($0) \#(n)"}"#.utf8) }
    }

    private func row(_ id: String) throws -> String? {
        let db = try SQLiteDatabase(path: folder.storePath)
        return try db.queryFirst("SELECT fields FROM records WHERE collection = 'c' AND id = ?", .text(id)) { $0.text(0) } ?? nil
    }

    /// Everything a client can read of `c`, in one value to compare.
    private func answers(_ store: SQLiteServerStore, at created: Int64) throws -> [String] {
        var lines: [String] = []
        lines += try ["a", "b", Self.nfd, Self.nfc].map { "record \($0): \(String(describing: try store.record("c", $0)))" }
        lines.append("list \(try store.list("c"))")
        lines.append("page \(try store.page("c", after: nil, limit: 3))")
        let listing = try store.listing("c")
        lines.append("listing \(try listing.next(10))")
        let lineListing = try store.listing("c")
        lines.append("listing lines " + String(decoding: try lineListing.nextLines(10, collection: "c").bytes, as: UTF8.self))
        lines.append("changes \(String(describing: try store.changes("c", since: 0, limit: 100)))")
        lines.append("changes after the creates \(String(describing: try store.changes("c", since: created, limit: 2)))")
        let changeLines = try XCTUnwrap(try store.changeLines("c", since: 0, limit: 100))
        lines.append("change lines " + String(decoding: changeLines.lines.bytes, as: UTF8.self) + " \(changeLines.seq)")
        lines.append("versions \(try store.versions("c", Self.nfd, limit: 5).map(\.fieldsJSON))")
        lines.append("list at the creates \(String(describing: try store.list("c", at: created)))")
        lines.append("list at now \(String(describing: try store.list("c", at: try store.currentSeq())))")
        lines.append("states at now \(String(describing: try store.states("c", ["a", Self.nfc], at: try store.currentSeq())?.sorted { $0.key < $1.key }))")
        lines.append("bytes \(try store.storedBytesByCollection())")
        return lines
    }

    func testEveryReadAnswersTheSameBeforeTheRowsAreWrittenAsAfter() throws {
        let (store, created) = try storeWithWaitingEdits()
        XCTAssertEqual(store.editsWaitingForRows, 4, "each edit waits, the twin ids' apart")
        XCTAssertEqual(try row("a"), #"{"v":"a 1"}"#, "the row lags its edit")
        XCTAssertEqual(try store.record("c", Self.nfd)?.fieldsJSON, #"{"v":"\#(Self.nfd) 2"}"#)
        XCTAssertEqual(try store.record("c", Self.nfc)?.fieldsJSON, #"{"v":"\#(Self.nfc) 2"}"#)
        XCTAssertEqual(try store.list("c").records.map(\.fieldsJSON), ["a", "b", Self.nfd, Self.nfc].map { #"{"v":"\#($0) 2"}"# })
        let replay = try XCTUnwrap(try store.changes("c", since: created, limit: 100))
        XCTAssertEqual(replay.changes.map(\.state.rev), [2, 2, 2, 2])
        XCTAssertEqual(replay.changes.map(\.seq), replay.changes.map(\.seq).sorted(), "the replay is in seq order")
        let before = try answers(store, at: created)

        try store.applyBehind()
        XCTAssertEqual(store.editsWaitingForRows, 0)
        XCTAssertEqual(try rows(), edited(["a", "b", Self.nfd, Self.nfc], 2))
        let after = try answers(store, at: created)
        XCTAssertEqual(after.count, before.count)
        for (line, expected) in zip(after, before) { XCTAssertEqual(Array(line.utf8), Array(expected.utf8), "\(line)\n\(expected)") }
    }

    func testAReadBegunBeforeTheRowsAreWrittenKeepsItsView() throws {
        let (store, _) = try storeWithWaitingEdits()
        let listing = try store.listing("c")
        XCTAssertEqual(try listing.next(1).map(\.fieldsJSON), [#"{"v":"a 2"}"#])
        try store.applyBehind()
        // Its snapshot has the old rows; the edits it saw waiting stay laid over them.
        XCTAssertEqual(try listing.next(10).map(\.fieldsJSON), ["b", Self.nfd, Self.nfc].map { #"{"v":"\#($0) 2"}"# })
    }

    func testAMoveOrDeleteOfARecordWhoseEditWaitsWritesItsRow() throws {
        let (store, _) = try storeWithWaitingEdits()
        guard case .changed(let moved) = try store.commit([.move(collection: "c", id: "a", baseRev: 2, placement: .last)])[0] else {
            return XCTFail("the move")
        }
        XCTAssertEqual(moved.state.fieldsJSON, #"{"v":"a 2"}"#, "the move keeps the waiting edit's fields")
        XCTAssertEqual(try row("a"), #"{"v":"a 2"}"#, "and writes them to the row with its place")
        XCTAssertEqual(try store.list("c").records.map(\.id).last, "a")
        _ = try store.commit([.delete(collection: "c", id: "b", baseRev: 2)])
        XCTAssertNil(try store.record("c", "b")?.fieldsJSON)
        XCTAssertEqual(store.editsWaitingForRows, 2, "the twins' edits still wait")
        let versions = try store.versions("c", "a", limit: 5).map(\.fieldsJSON)
        XCTAssertEqual(versions, [#"{"v":"a 1"}"#], "the history walks from the move through the edit")
    }

    func testAStartWritesTheRowsTheLogHoldsPastAppliedSeq() throws {
        let seq: Int64
        do {
            // Gone as a killed server goes: nothing written behind.
            let (store, _) = try storeWithWaitingEdits()
            seq = try store.currentSeq()
            _ = try store.commit([.put(collection: "c", id: "a", baseRev: 2, fieldsJSON: #"{"v":"a 3"}"#)])
        }
        XCTAssertEqual(try row("a"), #"{"v":"a 1"}"#)
        let reopened = try SQLiteServerStore(folder: folder, rowsBehindAutomatically: false)
        XCTAssertEqual(reopened.editsWaitingForRows, 0)
        XCTAssertEqual(try rows(), ([Array(#"a={"v":"a 3"}"#.utf8)] + edited(["b", Self.nfd, Self.nfc], 2)).sorted { $0.lexicographicallyPrecedes($1) })
        XCTAssertEqual(try reopened.currentSeq(), seq + 1)
        let db = try SQLiteDatabase(path: folder.storePath)
        XCTAssertEqual(try db.queryFirst("SELECT value FROM meta WHERE key = 'applied_seq'") { $0.integer(0) }, seq + 1)
    }

    func testADropRenameOrPurgeWritesTheWaitingRowsFirst() throws {
        let (store, _) = try storeWithWaitingEdits()
        XCTAssertEqual(try store.commit([.renameCollection(from: "c", to: "d")]), [.done])
        XCTAssertEqual(store.editsWaitingForRows, 0)
        XCTAssertEqual(try store.list("d").records.map(\.fieldsJSON), ["a", "b", Self.nfd, Self.nfc].map { #"{"v":"\#($0) 2"}"# })
        XCTAssertEqual(try store.list("c").records, [])
    }
}
