import Foundation
import PlistSyncTesting
import XCTest
@testable import ServerKit

/// The server's own answers to a store in trouble, on the test kit's simulated server: a full
/// disk and a stall come from `StoreFaults` under the real `ServerCore`, so these check its
/// disk-full mode, its stall deadlines and their words to the virtual millisecond, in
/// microseconds of test time (`StoreStallTests` stops a real PostgreSQL for the same story).
final class StoreFaultTests: XCTestCase {
    private func server() throws -> InMemoryServer {
        try InMemoryServer(users: [(name: "alice", password: "pw", admin: false)]) { $0.storeTimeoutMilliseconds = 1_000 }
    }

    func testAStalledStoreAnswersUnavailableAtItsDeadlineAndServesPingsMeanwhile() throws {
        let memory = try server()
        let reader = try memory.login("alice", "pw")
        let writer = try memory.login("alice", "pw")
        let pinger = try memory.login("alice", "pw")
        try reader.expect("c CREATE inv", equals: "c OK CREATE inv")
        try reader.expect(#"p PUT inv r1 0 {"name":"lamp"}"#, equals: "p OK PUT inv r1 1 1")

        let faults = memory.simulated.faults
        let stalledAt = memory.scheduler.now
        faults.stalledUntil = stalledAt + 5_000
        try reader.send("g GET inv r1")
        try writer.send(#"w PUT inv r2 0 {"name":"desk"}"#)
        // A PING needs no store: answered in the same virtual millisecond.
        try pinger.expect("x PING", equals: "x OK PONG")
        XCTAssertEqual(memory.scheduler.now, stalledAt)
        // The read is told at its deadline (the sweep looks every 100 ms), long before the store is back.
        XCTAssertEqual(try reader.readLine(), "g ERR UNAVAILABLE the store is not answering; retry in a moment")
        let answeredAfter = memory.scheduler.now - stalledAt
        XCTAssertTrue((1_000...1_100).contains(answeredAfter), "the read was answered after \(answeredAfter) ms")
        // Past the deadline the committer counts as stalled: a new write is refused at once, in
        // the server's own words, and nothing of it is written.
        let refusedAt = memory.scheduler.now
        try pinger.expect(#"v PUT inv r3 0 {"name":"chair"}"#, equals: "v ERR UNAVAILABLE the store is not answering; nothing was written; retry in a moment")
        XCTAssertEqual(memory.scheduler.now, refusedAt)
        // The write in flight when the store stopped commits once it answers again.
        XCTAssertEqual(try writer.readLine(), "w OK PUT inv r2 1 2")
        XCTAssertGreaterThanOrEqual(memory.scheduler.now, stalledAt + 5_000)
        try reader.expect("g GET inv r2", equals: #"g OK GET inv r2 1 a1 {"name":"desk"}"#)
        try reader.expect("h GET inv r3", equals: #"h ERR NOT_FOUND no record "r3" in inv"#)
    }

    func testAFullDiskTakesOnlyDeletesUntilItHasRoomAgain() throws {
        let memory = try server()
        let alice = try memory.login("alice", "pw")
        try alice.expect("c CREATE inv", equals: "c OK CREATE inv")
        try alice.expect(#"p PUT inv r1 0 {"name":"lamp"}"#, equals: "p OK PUT inv r1 1 1")

        let faults = memory.simulated.faults
        faults.diskFull = true
        // The commit finds the disk full: the server says so in its words, and takes only DEL.
        try alice.expect(#"q PUT inv r2 0 {"name":"desk"}"#, equals: "q ERR NO_SPACE the server's disk is full; nothing was written; retry later")
        try alice.expect(#"r PUT inv r3 0 {"name":"desk"}"#, equals: "r ERR NO_SPACE the server's disk is full: only DEL is accepted until it has room")
        try alice.expect("d DEL inv r1 1", equals: "d OK DEL inv r1 2 2")
        try alice.expect("s STATS", prefix: "s OK STATS ")
        // Room again: writes resume within a housekeeping round.
        faults.diskFull = false
        XCTAssertTrue(alice.wait(within: 2) { !memory.simulated.core!.diskFull })
        try alice.expect(#"t PUT inv r2 0 {"name":"desk"}"#, equals: "t OK PUT inv r2 1 3")
    }

    func testAFailedCommitWritesNothingAndSaysSo() throws {
        let memory = try server()
        let alice = try memory.login("alice", "pw")
        try alice.expect("c CREATE inv", equals: "c OK CREATE inv")
        memory.simulated.faults.commitsFail = true
        try alice.expect(#"p PUT inv r1 0 {"name":"lamp"}"#, equals: "p ERR INTERNAL the change could not be committed; retry")
        try alice.expect("g GET inv r1", equals: #"g ERR NOT_FOUND no record "r1" in inv"#)
        memory.simulated.faults.commitsFail = false
        try alice.expect(#"q PUT inv r1 0 {"name":"lamp"}"#, equals: "q OK PUT inv r1 1 1")
    }

    func testASlowStoreDelaysCommitsByItsSlownessOnly() throws {
        let memory = try server()
        let alice = try memory.login("alice", "pw")
        try alice.expect("c CREATE inv", equals: "c OK CREATE inv")
        memory.simulated.faults.slowness = 300
        let sent = memory.scheduler.now
        try alice.expect(#"p PUT inv r1 0 {"name":"lamp"}"#, equals: "p OK PUT inv r1 1 1")
        XCTAssertEqual(memory.scheduler.now - sent, 300, "the commit took the store's 300 ms, and the reply nothing more")
    }
}
