import XCTest
@testable import SyncCore
import SyncProtocol

/// REVERT's plan: back to the state before the chosen author's first change, never over
/// someone else's later change, nothing for a record already back (a second run is a no-op).
final class RevertPlanTests: XCTestCase {
    private let laptop = LoggedAuthor(user: "alice", device: "0123456789ab", deviceLabel: "stolen laptop", via: "agent")
    private let phone = LoggedAuthor(user: "alice", device: "ba9876543210", deviceLabel: "phone", via: "http")
    private let bob = LoggedAuthor(user: "bob", device: "password", deviceLabel: nil, via: "line")
    private var seq: Int64 = 10

    private func change(_ id: String, rev: Int64, _ fields: String?, by author: LoggedAuthor, position: String = "a0") -> LoggedChange {
        seq += 1
        let body: RecordState.Body = fields.map { .live(position: position, fieldsJSON: $0) } ?? .deleted
        return LoggedChange(collection: "c", seq: seq, state: RecordState(id: id, rev: rev, body: body), author: author, at: 1000 + seq)
    }

    private func live(_ id: String, rev: Int64, _ fields: String, position: String = "a0") -> RecordState {
        RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fields))
    }

    func testADevicesChangesGoBackToWhatTheyReplacedAndItsNewRecordsGo() {
        let changes = [
            change("x", rev: 2, #"{"n":"vandal"}"#, by: laptop),
            change("x", rev: 3, #"{"n":"vandal2"}"#, by: laptop),
            change("y", rev: 1, #"{"n":"junk"}"#, by: laptop, position: "b0"),
            change("z", rev: 5, nil, by: laptop),
            change("w", rev: 2, #"{"n":"phone"}"#, by: phone),
        ]
        let before = ["x": live("x", rev: 1, #"{"n":"good"}"#), "z": live("z", rev: 4, #"{"n":"kept"}"#, position: "c0"),
                      "w": live("w", rev: 1, #"{"n":"w"}"#)]
        let plan = RevertPlan(changes: changes, statesAt: before, author: .device("0123456789ab"))
        XCTAssertEqual(plan.steps.map(\.id), ["x", "y", "z"], "the phone's change is not the laptop's")
        XCTAssertEqual(plan.steps[0].target, before["x"]) 
        XCTAssertEqual(plan.steps[0].baseRev, 3)
        XCTAssertNil(plan.steps[1].target, "a record the device made goes")
        XCTAssertEqual(plan.steps[2].target?.fieldsJSON, #"{"n":"kept"}"#, "a record the device deleted comes back, in its place")
        XCTAssertEqual(plan.steps[2].target?.position, "c0")
        XCTAssertEqual(RevertPlan.written(plan.steps[2]).rev, 6)
        XCTAssertEqual(plan.kept, [])
    }

    func testARecordSomeoneElseChangedSinceIsKeptAndNamed() {
        let changes = [change("x", rev: 2, #"{"n":"vandal"}"#, by: laptop), change("x", rev: 3, #"{"n":"fixed by bob"}"#, by: bob)]
        let plan = RevertPlan(changes: changes, statesAt: ["x": live("x", rev: 1, #"{"n":"good"}"#)], author: .device("0123456789ab"))
        XCTAssertEqual(plan.steps, [])
        XCTAssertEqual(plan.kept, [RevertPlan.Kept(id: "x", rev: 3, changedBy: bob)])
    }

    func testWithoutAnAuthorEverythingSinceGoesBackAndNamesWhoseChangesItTakes() {
        let changes = [change("x", rev: 2, #"{"n":"a"}"#, by: laptop), change("x", rev: 3, #"{"n":"b"}"#, by: bob)]
        let plan = RevertPlan(changes: changes, statesAt: ["x": live("x", rev: 1, #"{"n":"good"}"#)], author: nil)
        XCTAssertEqual(plan.steps.count, 1)
        XCTAssertEqual(plan.steps[0].undoing, ["alice", "bob"])
        XCTAssertEqual(plan.steps[0].target?.fieldsJSON, #"{"n":"good"}"#)
    }

    func testARevertRunAgainAfterItsWritesPlansNothing() {
        let reverter = LoggedAuthor(user: "admin", device: "password", deviceLabel: nil, via: "line")
        let changes = [
            change("x", rev: 2, #"{"n":"vandal"}"#, by: laptop),
            change("y", rev: 1, #"{"n":"junk"}"#, by: laptop),
            change("x", rev: 3, #"{"n":"good"}"#, by: reverter),
            change("y", rev: 2, nil, by: reverter),
        ]
        let plan = RevertPlan(changes: changes, statesAt: ["x": live("x", rev: 1, #"{"n":"good"}"#)], author: .device("0123456789ab"))
        XCTAssertEqual(plan, RevertPlan(changes: [], statesAt: [:], author: nil), "done already: no step, nothing kept")
    }
}
