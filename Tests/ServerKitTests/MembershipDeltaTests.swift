@testable import ServerKit
import SyncCore
import SyncProtocol
import XCTest

/// Issue 30: account changes are applied to the directory as what changed, read off the loop.
final class MembershipDeltaTests: XCTestCase {
    private func info(_ name: String, _ owner: String, _ members: [String: Role]) -> CollectionInfo {
        CollectionInfo(name: name, owner: owner, members: members, lastSeq: 0)
    }

    func testTheDeltaNamesEachMadeDroppedAndChangedRoleAndNothingElse() {
        let old = ["a": info("a", "ann", ["ann": .admin, "bob": .write]), "b": info("b", "ann", ["ann": .admin]),
                   "c": info("c", "ann", ["ann": .admin])]
        var new = old
        new["a"]!.members["bob"] = .read
        new["a"]!.lastSeq = 99
        new["b"]!.members["bob"] = nil
        new["c"] = nil
        new["d"] = info("d", "cy", ["cy": .admin])
        let delta = MembershipDelta.between(old, new)
        XCTAssertEqual(delta.created, [info("d", "cy", ["cy": .admin])])
        XCTAssertEqual(delta.dropped, ["c"])
        XCTAssertEqual(delta.roles, [MembershipDelta.RoleChange(collection: "a", user: "bob", role: .read)])
        XCTAssertEqual(delta.affectedUsers, ["bob", "cy"])
        XCTAssertTrue(MembershipDelta.between(old, old).isEmpty)
    }

    func testWhatTheLoopCommitsDuringACheckIsNotReportedAsAChange() throws {
        let baseline = MembershipBaseline([info("a", "ann", ["ann": .admin])])
        // The loop grants bob while the check reads: the store read already has it.
        let first = try baseline.check { () throws(StoreFailure) in
            baseline.note("a", info("a", "ann", ["ann": .admin, "bob": .read]))
            return [info("a", "ann", ["ann": .admin, "bob": .read])]
        }
        guard case .delta(let delta) = first else { return XCTFail("\(first)") }
        XCTAssertEqual(delta.roles, [MembershipDelta.RoleChange(collection: "a", user: "bob", role: .read)], "idempotent for the directory")
        // Committed after the read: in the journal, so the next read (which has it) finds nothing new.
        let second = try baseline.check { () throws(StoreFailure) in [info("a", "ann", ["ann": .admin, "bob": .read])] }
        guard case .delta(let none) = second else { return XCTFail("\(second)") }
        XCTAssertTrue(none.isEmpty)
    }

    func testACheckAnsweredTooLateMakesTheNextHandOverEverything() throws {
        let baseline = MembershipBaseline([])
        _ = try baseline.check { () throws(StoreFailure) in [info("a", "ann", ["ann": .admin])] }
        baseline.lost()
        let next = try baseline.check { () throws(StoreFailure) in [info("a", "ann", ["ann": .admin])] }
        guard case .whole(let all) = next else { return XCTFail("\(next)") }
        XCTAssertEqual(all.map(\.name), ["a"])
    }

    func testAFailedReadAfterALostAnswerStillHandsOverEverythingNext() throws {
        let baseline = MembershipBaseline([])
        baseline.lost()
        XCTAssertThrowsError(try baseline.check { () throws(StoreFailure) -> [CollectionInfo] in throw StoreFailure(.failed, "stalled") })
        let next = try baseline.check { () throws(StoreFailure) in [info("a", "ann", ["ann": .admin])] }
        guard case .whole = next else { return XCTFail("\(next)") }
    }
}
