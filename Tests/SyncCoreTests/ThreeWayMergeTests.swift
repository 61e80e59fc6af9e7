import SyncProtocol
import XCTest
@testable import SyncCore

final class ThreeWayMergeTests: XCTestCase {
    private let base: Fields = ["name": .string("Ada"), "phone": .string("1"), "city": .string("London")]

    func testDisjointEditsBothSurvive() {
        let local: Fields = ["name": .string("Ada"), "phone": .string("2"), "city": .string("London")]
        let remote: Fields = ["name": .string("Ada L"), "phone": .string("1"), "city": .string("London")]
        let result = ThreeWayMerge.merge(base: base, local: local, remote: remote)
        XCTAssertEqual(result.merged, ["name": .string("Ada L"), "phone": .string("2"), "city": .string("London")])
        XCTAssertFalse(result.hasConflicts)
    }

    /// Both directions: whichever side changed a field wins it (syncthing's habit).
    func testOneSidedChangeWinsFromEitherSide() {
        let changed: Fields = ["name": .string("Ada"), "phone": .string("9"), "city": .string("London")]
        XCTAssertEqual(ThreeWayMerge.merge(base: base, local: changed, remote: base).merged, changed)
        XCTAssertEqual(ThreeWayMerge.merge(base: base, local: base, remote: changed).merged, changed)
    }

    func testSameFieldChangedDifferentlyKeepsRemoteAndReports() {
        let local: Fields = ["name": .string("Ada"), "phone": .string("local"), "city": .string("London")]
        let remote: Fields = ["name": .string("Ada"), "phone": .string("remote"), "city": .string("Paris")]
        let result = ThreeWayMerge.merge(base: base, local: local, remote: remote)
        XCTAssertEqual(result.merged["phone"], .string("remote"))
        XCTAssertEqual(result.merged["city"], .string("Paris"))
        XCTAssertEqual(result.conflictingKeys, ["phone"])
    }

    func testSameChangeOnBothSidesIsNoConflict() {
        let edited: Fields = ["name": .string("Ada"), "phone": .string("same"), "city": .string("London")]
        XCTAssertFalse(ThreeWayMerge.merge(base: base, local: edited, remote: edited).hasConflicts)
    }

    func testAdditionsAndRemovalsMerge() {
        var local = base
        local["email"] = .string("ada@example.com")
        var remote = base
        remote["city"] = nil
        let result = ThreeWayMerge.merge(base: base, local: local, remote: remote)
        XCTAssertEqual(result.merged, ["name": .string("Ada"), "phone": .string("1"), "email": .string("ada@example.com")])
        XCTAssertFalse(result.hasConflicts)
    }

    func testRemovedOnOneSideEditedOnTheOtherConflicts() {
        var local = base
        local["phone"] = nil
        var remote = base
        remote["phone"] = .string("2")
        let result = ThreeWayMerge.merge(base: base, local: local, remote: remote)
        XCTAssertEqual(result.merged["phone"], .string("2"))
        XCTAssertEqual(result.conflictingKeys, ["phone"])
    }

    func testNoBaseMeansDifferingFieldsConflict() {
        let result = ThreeWayMerge.merge(base: nil, local: ["a": .integer(1), "b": .integer(2)], remote: ["a": .integer(3), "c": .integer(4)])
        XCTAssertEqual(result.merged, ["a": .integer(3), "b": .integer(2), "c": .integer(4)])
        XCTAssertEqual(result.conflictingKeys, ["a"])
    }
}
