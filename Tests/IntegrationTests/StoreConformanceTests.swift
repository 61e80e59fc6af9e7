import EventLoop
import Foundation
import PlistSyncTesting
import PostgresStore
import SQLiteStore
import SyncCore
import SyncProtocol
import XCTest

/// One contract, three stores (issue 32): the rules every `ServerStore` keeps — revisions,
/// conflicts, tombstones, placement, the change feed, collections and grants — checked the
/// same way over the memory store the in-memory tests run on, a real SQLite file and a real
/// PostgreSQL database. A store that answers differently fails here, not in a session test.
final class StoreConformanceTests: XCTestCase {
    /// The loops the PostgreSQL stores were made for, kept for as long as the test runs.
    private var loops: [EventLoop] = []

    /// Each store, fresh, with users `alice` (who owns the collections made here) and `bob`.
    private func stores() throws -> [(name: String, store: any ServerStore)] {
        let memory = MemoryStore(users: ["alice", "bob"].map { StoredUser(name: $0, passwordHash: "-", isAdmin: false) })
        let path = NSTemporaryDirectory() + "conformance-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let folder = DataFolder(path: path)
        let sqlite = try SQLiteServerStore(folder: folder)
        let accounts = try Accounts(folder: folder)
        let url = try TestPostgres.freshDatabase()
        let loop = EventLoop()
        loops.append(loop)
        let postgres = try PostgresServerStore(url: url, loop: loop)
        let postgresAccounts = try PostgresAccounts(url: url)
        for user in ["alice", "bob"] {
            _ = try accounts.addUser(user, passwordHash: "-", isAdmin: false)
            _ = try postgresAccounts.addUser(user, passwordHash: "-", isAdmin: false)
        }
        return [("memory", memory), ("SQLite", sqlite), ("PostgreSQL", postgres)]
    }

    /// `eachStore`, for the tests in other files.
    func eachStoreWithCollection(_ check: (any ServerStore) throws -> Void) throws {
        try eachStore(check)
    }

    /// Runs `check` over each store with a collection `c` made; failures name the store.
    private func eachStore(_ check: (any ServerStore) throws -> Void) throws {
        for (name, store) in try stores() {
            XCTAssertEqual(try store.commit([.createCollection(name: "c", owner: "alice")]), [.done], name)
            let failures = testRun?.totalFailureCount ?? 0
            try check(store)
            if (testRun?.totalFailureCount ?? 0) > failures { XCTFail("the failures above are the \(name) store's") }
        }
    }

    private func put(_ store: any ServerStore, _ id: String, base: Int64, _ json: String) throws -> StoreOutcome {
        try store.commit([.put(collection: "c", id: id, baseRev: base, fieldsJSON: json)])[0]
    }


    func testRevisionsCountUpAndAStaleBaseIsAConflictWithTheCurrentState() throws {
        try eachStore { store in
            guard case .changed(let first) = try put(store, "ada", base: 0, #"{"name":"Ada"}"#) else { return XCTFail("the create") }
            XCTAssertEqual(first.state.rev, 1)
            guard case .changed(let second) = try put(store, "ada", base: 1, #"{"name":"Ada L"}"#) else { return XCTFail("the update") }
            XCTAssertEqual(second.state.rev, 2)
            XCTAssertGreaterThan(second.seq, first.seq)
            XCTAssertEqual(try put(store, "ada", base: 1, #"{"name":"stale"}"#), .conflict(collection: "c", id: "ada", current: second.state))
            XCTAssertEqual(try store.record("c", "ada")?.fieldsJSON, #"{"name":"Ada L"}"#)
            XCTAssertEqual(try store.currentSeq(), second.seq)
        }
    }

    func testADeleteLeavesATombstoneInTheFeedAndTheListDropsIt() throws {
        try eachStore { store in
            _ = try put(store, "ada", base: 0, #"{"n":1}"#)
            _ = try put(store, "bob", base: 0, #"{"n":2}"#)
            guard case .changed(let deleted) = try store.commit([.delete(collection: "c", id: "ada", baseRev: 1)])[0] else { return XCTFail("the delete") }
            XCTAssertEqual(deleted.state.rev, 2)
            XCTAssertNil(deleted.state.fieldsJSON)
            XCTAssertEqual(try store.list("c").records.map(\.id), ["bob"])
            let feed = try XCTUnwrap(try store.changes("c", since: 0, limit: 100))
            XCTAssertEqual(feed.changes.map(\.state.id), ["bob", "ada"], "each record once, at its latest change, in seq order")
            XCTAssertEqual(feed.seq, deleted.seq)
            XCTAssertEqual(try store.changes("c", since: deleted.seq, limit: 100)?.changes.count, 0)
        }
    }

    func testMovesPlaceRecordsAndTwinIdsAreTwoRecords() throws {
        try eachStore { store in
            for id in ["a", "b", "Zo\u{00EB}", "Zoe\u{0308}"] { _ = try put(store, id, base: 0, #"{}"#) }
            XCTAssertEqual(try store.list("c").records.map(\.id), ["a", "b", "Zo\u{00EB}", "Zoe\u{0308}"], "created at the end, in order")
            guard case .changed = try store.commit([.move(collection: "c", id: "Zoe\u{0308}", baseRev: 1, placement: .after("a"))])[0] else {
                return XCTFail("the move after a")
            }
            guard case .changed = try store.commit([.move(collection: "c", id: "Zo\u{00EB}", baseRev: 1, placement: .before("Zoe\u{0308}"))])[0] else {
                return XCTFail("a move relative to the twin spelled the other way")
            }
            XCTAssertEqual(try store.list("c").records.map(\.id).map { Array($0.utf8) }, ["a", "Zo\u{00EB}", "Zoe\u{0308}", "b"].map { Array($0.utf8) })
            XCTAssertEqual(try store.commit([.move(collection: "c", id: "a", baseRev: 1, placement: .after("gone"))]),
                           [.refused(ProtocolError(.notFound, "no record \"gone\" in c"))])
            let page = try store.page("c", after: nil, limit: 2)
            XCTAssertEqual(page.records.count, 2)
            let rest = try store.page("c", after: RecordCursor(position: page.records[1].position!, id: page.records[1].id), limit: 10)
            XCTAssertEqual((page.records + rest.records).map(\.id), try store.list("c").records.map(\.id), "pages read the same order")
        }
    }

    func testAConflictInABatchIsAnAnswerAndTheRestCommits() throws {
        try eachStore { store in
            let outcomes = try store.commit([.put(collection: "c", id: "x", baseRev: 0, fieldsJSON: "{}"),
                                             .put(collection: "c", id: "x", baseRev: 0, fieldsJSON: "{}")])
            guard case .changed = outcomes[0], case .conflict = outcomes[1] else { return XCTFail("\(outcomes)") }
            XCTAssertEqual(try store.record("c", "x")?.rev, 1, "a conflict in a batch is an answer, not a rollback")
        }
    }

    func testCollectionsAreCreatedRenamedGrantedAndDropped() throws {
        try eachStore { store in
            XCTAssertEqual(try store.commit([.createCollection(name: "c", owner: "alice")]), [.refused(ProtocolError(.exists, "collection c exists"))])
            _ = try put(store, "ada", base: 0, "{}")
            XCTAssertEqual(try store.commit([.renameCollection(from: "c", to: "d")]), [.done])
            XCTAssertNil(try store.record("c", "ada"))
            XCTAssertEqual(try store.record("d", "ada")?.rev, 1)
            XCTAssertEqual(try store.commit([.grant(collection: "d", user: "bob", role: Role.read)]), [.done])
            XCTAssertEqual(try store.collections().first { $0.name == "d" }?.members["bob"], Role.read)
            XCTAssertEqual(try store.commit([.dropCollection(name: "d")]), [.done])
            XCTAssertEqual(try store.collections().map(\.name), [])
        }
    }
}
