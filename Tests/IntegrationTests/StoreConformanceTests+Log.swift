import Foundation
import PostgresStore
import SyncCore
import SyncProtocol
import XCTest

/// The change log's contract, the same on every store: each change logged with its author,
/// in seq order; LOG's filters and windows; states and listings as they stood at a seq;
/// versions from the log; retention that keeps each record's latest change; a restore.
extension StoreConformanceTests {
    private static let laptop = ChangeAuthor(user: "bob", tokenHash: String(repeating: "ab", count: 32), via: .agent)
    private static let console = ChangeAuthor(user: "alice", tokenHash: nil, via: .http)

    private func write(_ store: any ServerStore, _ operations: [StoreOperation]) throws {
        for outcome in try store.commit(operations) {
            guard case .changed = outcome else { return XCTFail("not written: \(outcome)") }
        }
    }

    /// a (alice) → 1, b (alice) → 2, a (bob's laptop) → 3, b deleted (laptop) → 4, c (laptop) → 5, a moved (alice) → 6.
    private func history(_ store: any ServerStore) throws {
        try write(store, [.put(collection: "c", id: "a", baseRev: 0, fieldsJSON: #"{"n":1}"#, by: Self.console),
                          .put(collection: "c", id: "b", baseRev: 0, fieldsJSON: #"{"n":2}"#, by: Self.console)])
        try write(store, [.put(collection: "c", id: "a", baseRev: 1, fieldsJSON: #"{"n":"bad"}"#, by: Self.laptop),
                          .delete(collection: "c", id: "b", baseRev: 1, by: Self.laptop),
                          .put(collection: "c", id: "c", baseRev: 0, fieldsJSON: #"{"n":"junk"}"#, by: Self.laptop)])
        try write(store, [.move(collection: "c", id: "a", baseRev: 2, placement: .last, by: Self.console)])
    }

    func testEveryChangeIsLoggedInSeqOrderWithItsAuthor() throws {
        try eachStoreWithCollection { store in
            try history(store)
            let log = try store.log("c", LogQuery(since: nil, author: nil, limit: 100))
            XCTAssertEqual(log.map(\.seq), [1, 2, 3, 4, 5, 6])
            XCTAssertEqual(log.map(\.state.id), ["a", "b", "a", "b", "c", "a"])
            XCTAssertEqual(log[3].state.body, .deleted)
            XCTAssertEqual(log[2].author, LoggedAuthor(user: "bob", device: "abababababab", deviceLabel: nil, via: "agent"))
            XCTAssertEqual(log[0].author, LoggedAuthor(user: "alice", device: "password", deviceLabel: nil, via: "http"))
            XCTAssertEqual(try store.log("c", LogQuery(since: nil, author: nil, limit: 2)).map(\.seq), [5, 6], "without SINCE: the latest, in seq order")
            XCTAssertEqual(try store.log("c", LogQuery(since: 2, author: nil, limit: 2)).map(\.seq), [3, 4], "with SINCE: the first after it")
            XCTAssertEqual(try store.log("c", LogQuery(since: nil, author: .device("abababababab"), limit: 100)).map(\.seq), [3, 4, 5])
            XCTAssertEqual(try store.log("c", LogQuery(since: 3, author: .user("alice"), limit: 100)).map(\.seq), [6])
            XCTAssertEqual(try store.log("other", LogQuery(since: nil, author: nil, limit: 100)), [])
        }
    }

    func testAListingAndStatesAtASeqAreTheStoreAsItStoodThen() throws {
        try eachStoreWithCollection { store in
            try history(store)
            XCTAssertEqual(try store.list("c", at: 2)?.map(\.id), ["a", "b"])
            XCTAssertEqual(try store.list("c", at: 2)?.first?.fieldsJSON, #"{"n":1}"#)
            XCTAssertEqual(try store.list("c", at: 5)?.map(\.id), ["a", "c"], "b deleted at 4")
            XCTAssertEqual(try store.list("c", at: 6)?.map(\.id), try store.list("c").records.map(\.id), "at the current seq: the listing")
            XCTAssertEqual(try store.list("c", at: 6), try store.list("c").records)
            XCTAssertEqual(try store.list("c", at: 0), [], "before anything")
            XCTAssertNil(try store.list("c", at: 7), "ahead of the store")
            let states = try XCTUnwrap(try store.states("c", ["a", "b", "c"], at: 3))
            XCTAssertEqual(states["a"]?.fieldsJSON, #"{"n":"bad"}"#)
            XCTAssertEqual(states["b"]?.rev, 1)
            XCTAssertNil(states["c"], "made after seq 3")
        }
    }

    func testVersionsComeFromTheLogAndNameWhoReplacedThem() throws {
        try eachStoreWithCollection { store in
            try history(store)
            let versions = try store.versions("c", "a", limit: 10)
            XCTAssertEqual(versions.map(\.rev), [1], "the move kept the fields: no version of its own")
            XCTAssertEqual(versions.first?.replacedBy.user, "bob")
            XCTAssertEqual(versions.first?.replacedBy.via, "agent")
            XCTAssertEqual(try store.versions("c", "b", limit: 10).map(\.fieldsJSON), [#"{"n":2}"#], "a delete keeps what it deleted")
        }
    }

    func testARestoreWritesAStateBackAsANewRevisionCheckedAgainstItsBase() throws {
        try eachStoreWithCollection { store in
            try history(store)
            let before = try XCTUnwrap(try store.states("c", ["b"], at: 2)?["b"])
            let outcomes = try store.commit([.restore(collection: "c", id: "b", baseRev: 2, state: before, by: Self.console),
                                             .restore(collection: "c", id: "c", baseRev: 1, state: nil, by: Self.console),
                                             .restore(collection: "c", id: "a", baseRev: 1, state: nil, by: Self.console)])
            guard case .changed(let back) = outcomes[0] else { return XCTFail("\(outcomes[0])") }
            XCTAssertEqual(back.state, RecordState(id: "b", rev: 3, body: before.body), "its fields and its place, at the next rev")
            guard case .changed(let gone) = outcomes[1] else { return XCTFail("\(outcomes[1])") }
            XCTAssertEqual(gone.state.body, .deleted)
            guard case .conflict(_, "a", let current) = outcomes[2] else { return XCTFail("a stale base is a conflict: \(outcomes[2])") }
            XCTAssertEqual(current?.rev, 3)
            XCTAssertEqual(try store.list("c").records.map(\.id), ["b", "a"])
        }
    }

    func testRetentionLetsOldChangesGoButKeepsEachRecordsLatest() throws {
        try eachStoreWithCollection { store in
            try history(store)
            let future = Int64(Date().timeIntervalSince1970) + 3600
            XCTAssertEqual(try store.commit([.purgeTombstones(updatedBefore: 0, history: HistoryRetention(now: future, keepSeconds: 0))]), [.done])
            let kept = try store.log("c", LogQuery(since: nil, author: nil, limit: 100))
            if store is PostgresServerStore {
                // Nodes read each other's commits from the log: PostgreSQL keeps its last hour whatever the history kept.
                XCTAssertEqual(kept.map(\.seq), [1, 2, 3, 4, 5, 6])
                return
            }
            XCTAssertEqual(kept.map(\.seq), [4, 5, 6], "the latest of b (a tombstone), c and a")
            XCTAssertNil(try store.list("c", at: 3), "a's state at 3 is gone: the listing cannot be rebuilt")
            XCTAssertEqual(try store.list("c", at: 6)?.map(\.id), ["c", "a"], "the present still can")
            // Later changes are trimmed in their turn; the latest ones kept before stay.
            XCTAssertEqual(try store.commit([.put(collection: "c", id: "c", baseRev: 1, fieldsJSON: #"{"n":"c2"}"#),
                                             .put(collection: "c", id: "c", baseRev: 2, fieldsJSON: #"{"n":"c3"}"#)]).count, 2)
            XCTAssertEqual(try store.commit([.purgeTombstones(updatedBefore: 0, history: HistoryRetention(now: future, keepSeconds: 0))]), [.done])
            XCTAssertEqual(try store.log("c", LogQuery(since: nil, author: nil, limit: 100)).map(\.seq), [4, 6, 8])
        }
    }

    /// Two days on, the hourly tier keeps a record's latest change of each hour: here (one hour)
    /// each record's latest; a listing reaches back only where the log is whole.
    func testThinningKeepsARecordsLatestOfEachHourAndRelinksItsChain() throws {
        try eachStoreWithCollection { store in
            try history(store)
            let later = Int64(Date().timeIntervalSince1970) + 2 * 86_400
            XCTAssertEqual(try store.commit([.purgeTombstones(updatedBefore: 0, history: HistoryRetention(now: later, keepSeconds: 30 * 86_400))]), [.done])
            let kept = try store.log("c", LogQuery(since: nil, author: nil, limit: 100)).map(\.seq)
            if store is PostgresServerStore {
                XCTAssertEqual(kept, [1, 2, 3, 4, 5, 6], "the last hour stays for the other nodes")
                return
            }
            XCTAssertEqual(kept, [4, 5, 6])
            XCTAssertEqual(try store.versions("c", "a", limit: 10), [], "a's earlier states of that hour went")
            XCTAssertEqual(try store.list("c", at: 6)?.map(\.id), ["c", "a"])
            XCTAssertNil(try store.list("c", at: 5), "inside the thinned hour: cannot be rebuilt")
            XCTAssertEqual(try store.commit([.purgeTombstones(updatedBefore: 0, history: HistoryRetention(now: later, keepSeconds: 30 * 86_400))]), [.done])
            XCTAssertEqual(try store.log("c", LogQuery(since: nil, author: nil, limit: 100)).map(\.seq), [4, 5, 6], "thinned once")
        }
    }

    func testAPurgedTombstoneTakesItsHistoryAndTheListingsItWasIn() throws {
        try eachStoreWithCollection { store in
            try history(store)
            let future = Int64(Date().timeIntervalSince1970) + 3600
            XCTAssertEqual(try store.commit([.purgeTombstones(updatedBefore: future, history: HistoryRetention(now: 0, keepSeconds: 0))]), [.done])
            XCTAssertEqual(try store.log("c", LogQuery(since: nil, author: nil, limit: 100)).map(\.seq), [1, 3, 5, 6])
            XCTAssertNil(try store.list("c", at: 3), "b was there at 3 and is gone")
            XCTAssertEqual(try store.list("c", at: 4)?.map(\.id), ["a"], "from its delete on, the listings can be rebuilt")
            XCTAssertEqual(try store.list("c", at: 4)?.first?.fieldsJSON, #"{"n":"bad"}"#)
        }
    }

    func testDroppingOrRenamingACollectionTakesItsLogAlong() throws {
        try eachStoreWithCollection { store in
            try history(store)
            XCTAssertEqual(try store.commit([.renameCollection(from: "c", to: "d")]), [.done])
            XCTAssertEqual(try store.log("c", LogQuery(since: nil, author: nil, limit: 100)), [])
            XCTAssertEqual(try store.log("d", LogQuery(since: nil, author: nil, limit: 100)).map(\.seq), [1, 2, 3, 4, 5, 6])
            XCTAssertEqual(try store.list("d", at: 2)?.map(\.id), ["a", "b"])
            XCTAssertEqual(try store.commit([.dropCollection(name: "d")]), [.done])
            XCTAssertEqual(try store.log("d", LogQuery(since: nil, author: nil, limit: 100)), [])
        }
    }
}
