import XCTest
@testable import SyncCore

/// Which logged states are versions: fields a PUT or DEL replaced, with who replaced them and
/// when; never a MOVE's (it keeps the fields), never a tombstone's.
final class RecordVersionTests: XCTestCase {
    private let alice = LoggedAuthor(user: "alice", device: "0123456789ab", deviceLabel: "laptop", via: "agent")
    private let bob = LoggedAuthor(user: "bob", device: "password", deviceLabel: nil, via: "http")

    private func change(_ seq: Int64, rev: Int64, _ body: RecordState.Body, by author: LoggedAuthor, at time: Int64) -> LoggedChange {
        LoggedChange(collection: "c", seq: seq, state: RecordState(id: "a", rev: rev, body: body), author: author, at: time)
    }

    func testEveryReplacedStateIsAVersionNamingWhoReplacedItAndWhen() {
        let log = [
            change(1, rev: 1, .live(position: "a0", fieldsJSON: #"{"n":1}"#), by: alice, at: 100),
            change(2, rev: 2, .live(position: "a0", fieldsJSON: #"{"n":2}"#), by: bob, at: 101),
            change(5, rev: 3, .deleted, by: alice, at: 150),
        ]
        XCTAssertEqual(RecordVersion.fromLog(log), [
            RecordVersion(rev: 2, fieldsJSON: #"{"n":2}"#, replacedAt: 150, replacedBy: alice),
            RecordVersion(rev: 1, fieldsJSON: #"{"n":1}"#, replacedAt: 101, replacedBy: bob),
        ], "a burst one second apart keeps both states, newest first")
    }

    func testAMoveOrATombstoneMakesNoVersion() {
        let log = [
            change(1, rev: 1, .live(position: "a0", fieldsJSON: #"{"n":1}"#), by: alice, at: 100),
            change(2, rev: 2, .live(position: "Zz", fieldsJSON: #"{"n":1}"#), by: alice, at: 110),
            change(3, rev: 3, .deleted, by: bob, at: 120),
            change(4, rev: 4, .live(position: "b0", fieldsJSON: #"{"n":9}"#), by: bob, at: 130),
        ]
        XCTAssertEqual(RecordVersion.fromLog(log), [RecordVersion(rev: 2, fieldsJSON: #"{"n":1}"#, replacedAt: 120, replacedBy: bob)],
                       "the moved state is the version the delete replaced; the tombstone has no fields")
        XCTAssertEqual(RecordVersion.fromLog(Array(log.prefix(1))), [], "the current state is not an earlier version")
    }
}
