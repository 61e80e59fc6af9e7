import Foundation
import SQLiteKit
@testable import SQLiteStore
import SyncCore
import SyncProtocol
import XCTest

/// A data folder made before the change log (schema 5) opens with its records as the log's
/// first changes, by an unknown author: LIST AT reaches back to the seq it had then, versions
/// kept before the log still show, and seqs go on from where they were.
final class ChangeLogMigrationTests: XCTestCase {
    func testAStoreFromBeforeTheLogStartsItsLogWithItsRecords() throws {
        let path = NSTemporaryDirectory() + "plistsync-migrate-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let folder = DataFolder(path: path)
        do {
            let old = try SQLiteDatabase(path: folder.storePath)
            for step in 0..<5 { try old.execute(script: Schema.migrations[step]) }
            try old.execute(script: "PRAGMA user_version = 5")
            try old.execute(script: """
                INSERT INTO meta (key, value) VALUES ('server_id', 'old'), ('seq', 9), ('purged_seq', 0), ('accounts_epoch', 0);
                INSERT INTO collections (name, owner, created_at) VALUES ('c', 'alice', 0);
                INSERT INTO records (collection, id, rev, seq, position, fields, updated_at) VALUES
                    ('c', 'a', 3, 7, 'a0', '{"n":3}', 100), ('c', 'b', 1, 2, 'a1', '{"n":1}', 100), ('c', 'gone', 2, 9, NULL, NULL, 100);
                INSERT INTO record_versions (collection, id, rev, fields, replaced_at) VALUES ('c', 'a', 2, '{"n":2}', 90);
                """)
        }
        let store = try SQLiteServerStore(folder: folder)
        XCTAssertEqual(try store.currentSeq(), 9)
        let log = try store.log("c", LogQuery(since: nil, author: nil, limit: 10))
        XCTAssertEqual(log.map(\.seq), [2, 7, 9], "each record as it stood, at its seq")
        XCTAssertEqual(Set(log.map(\.author)), [.unknown])
        XCTAssertNil(try store.list("c", at: 8), "before the log began")
        XCTAssertEqual(try store.list("c", at: 9)?.map(\.id), ["a", "b"])
        XCTAssertEqual(try store.versions("c", "a", limit: 10).map(\.rev), [2], "the version kept before the log")

        let author = ChangeAuthor(user: "alice", tokenHash: nil, via: .line)
        guard case .changed(let change) = try store.commit([.put(collection: "c", id: "a", baseRev: 3, fieldsJSON: #"{"n":4}"#, by: author)])[0] else {
            return XCTFail("not written")
        }
        XCTAssertEqual(change.seq, 10, "seqs go on")
        XCTAssertEqual(try store.versions("c", "a", limit: 10).map(\.rev), [3, 2], "the log's, then the older ones")
        XCTAssertEqual(try store.list("c", at: 9)?.first?.fieldsJSON, #"{"n":3}"#)
        XCTAssertEqual(try store.changes("c", since: 0, limit: 100)?.changes.map(\.seq), [2, 9, 10], "the replay: each record's latest, in seq order")
        XCTAssertEqual(try store.changes("c", since: 7, limit: 100)?.changes.map { "\($0.state.id)@\($0.seq)" }, ["gone@9", "a@10"])
    }

    /// SUB's replay walks the log's index in seq order and looks each change's record up by its
    /// key: no index of records by seq (a write would keep it up), no sort.
    func testTheReplayReadsTheLogInOrderWithNoIndexOfRecordsBySeq() throws {
        let path = NSTemporaryDirectory() + "plistsync-replay-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let db = try DataFolder(path: path).open()
        let indexes = try db.query("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL") { $0.text(0) ?? "" }
        XCTAssertEqual(indexes, ["records_in_order"])
        let plan = try db.query("EXPLAIN QUERY PLAN " + RecordReader.latestChangesSince, .text("c"), .integer(0), .integer(10)) { $0.text(3) ?? "" }
        XCTAssertEqual(plan, ["SEARCH c USING COVERING INDEX changes_by_collection (collection=? AND seq>?)", "SEARCH r USING PRIMARY KEY (collection=? AND id=?)"])
    }

    /// The seq is the log's last change: no counter is written by a commit, and a purge or a
    /// drop that deletes the last changes keeps it from going back.
    func testTheSeqNeverGoesBackWhenTheLastChangesAreDeleted() throws {
        let path = NSTemporaryDirectory() + "plistsync-seq-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let folder = DataFolder(path: path)
        var store: SQLiteServerStore? = try SQLiteServerStore(folder: folder)
        XCTAssertEqual(try store!.commit([.createCollection(name: "c", owner: "alice"), .createCollection(name: "d", owner: "alice")]), [.done, .done])
        _ = try store!.commit([.put(collection: "c", id: "a", baseRev: 0, fieldsJSON: "{}"), .put(collection: "d", id: "x", baseRev: 0, fieldsJSON: "{}"),
                               .delete(collection: "c", id: "a", baseRev: 1)])
        XCTAssertEqual(try store!.currentSeq(), 3)
        let future = Int64(Date().timeIntervalSince1970) + 60
        XCTAssertEqual(try store!.commit([.purgeTombstones(updatedBefore: future, history: HistoryRetention(now: future, keepSeconds: 86_400)),
                                          .dropCollection(name: "d")]), [.done, .done])
        XCTAssertEqual(try store!.currentSeq(), 3)
        store = nil
        store = try SQLiteServerStore(folder: folder)
        XCTAssertEqual(try store!.currentSeq(), 3, "after a restart too")
        guard case .changed(let change) = try store!.commit([.put(collection: "c", id: "b", baseRev: 0, fieldsJSON: "{}")])[0] else { return XCTFail("not written") }
        XCTAssertEqual(change.seq, 4)
    }
}
