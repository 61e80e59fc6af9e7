import Foundation
import XCTest
@testable import SyncProtocol

/// `Value.isIdentical`: bit for bit, where Swift's `==` takes twins for one value.
final class ValueIdentityTests: XCTestCase {
    func testTwinsThatEqualityJoinsAreNotIdentical() {
        let pairs: [(Value, Value)] = [
            (.real(0.0), .real(-0.0)),
            (.string("Zo\u{EB}"), .string("Zoe\u{308}")),
            (.dictionary(["Zo\u{EB}": .integer(1)]), .dictionary(["Zoe\u{308}": .integer(1)])),
            (.array([.real(0.0)]), .array([.real(-0.0)])),
        ]
        for (a, b) in pairs {
            XCTAssertEqual(a, b, "Swift's == joins them")
            XCTAssertFalse(a.isIdentical(to: b), "\(a) and \(b)")
        }
    }

    func testValuesAreIdenticalToThemselvesNaNIncluded() {
        let values: [Value] = [.real(.nan), .real(-0.0), .string("Zoe\u{308}"), .unsigned(.max), .integer(-1), .bool(true),
                               .date(Date(timeIntervalSinceReferenceDate: 0.1)), .data(Data([0, 1])), .array([]), .dictionary(["k": .array([.real(.nan)])])]
        for value in values { XCTAssertTrue(value.isIdentical(to: value), "\(value)") }
        XCTAssertFalse(Value.integer(1).isIdentical(to: .real(1.0)), "types stay distinct")
        XCTAssertFalse(Value.dictionary(["a": .integer(1)]).isIdentical(to: .dictionary(["a": .integer(1), "b": .integer(2)])))
        XCTAssertTrue(Value.identical(nil, nil))
        XCTAssertFalse(Value.identical(.integer(1), nil))
    }
}
