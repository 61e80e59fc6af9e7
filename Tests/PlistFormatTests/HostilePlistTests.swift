import Foundation
import SyncProtocol
import XCTest
@testable import PlistFormat

/// Binary plists made to hurt the reader (issue 9 item 10, found by the fuzzers too): each must
/// be refused with an error, quickly, never trap or take gigabytes.
final class HostilePlistTests: XCTestCase {
    private func binaryPlist(_ objects: [[UInt8]], referenceSize: UInt8 = 1) -> [UInt8] {
        BinaryPlistBuilder.file(objects, referenceSize: Int(referenceSize))
    }

    func testADoublingDAGIsRefusedNotExpanded() throws {
        // Object i is an array holding object i+1 twice: 40 levels name 2^40 leaves.
        var objects: [[UInt8]] = (0..<40).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] }
        objects.append([0x51, UInt8(ascii: "x")])
        let file = binaryPlist(objects)
        XCTAssertLessThan(file.count, 1_000)
        let started = Date()
        XCTAssertThrowsError(try PlistFile.decode(file))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    func testADateOfTenToThe300IsRefused() throws {
        let bits = (1e300 as Double).bitPattern
        let date: [UInt8] = [0x33] + (0..<8).reversed().map { UInt8((bits >> (UInt64($0) * 8)) & 0xFF) }
        XCTAssertThrowsError(try PlistFile.decode(binaryPlist([[0xA1, 1], date]))) { error in
            XCTAssertTrue("\(error)".contains("date"), "\(error)")
        }
    }

    func testAnObjectReferenceOfAllOnesIsRefused() throws {
        let array: [UInt8] = [0xA1] + Array(repeating: 0xFF, count: 8)
        XCTAssertThrowsError(try PlistFile.decode(binaryPlist([array, [0x08]], referenceSize: 8)))
    }

    func testDatesAtTheEdgesOfTheWireRangeWriteWithoutTrapping() {
        XCTAssertEqual(ISO8601UTC.format(Date(timeIntervalSince1970: 1e300)), "9999-12-31T23:59:59Z")
        XCTAssertEqual(ISO8601UTC.format(Date(timeIntervalSince1970: -1e300)), "0001-01-01T00:00:00Z")
        XCTAssertEqual(ISO8601UTC.format(Date(timeIntervalSince1970: .nan)), "0001-01-01T00:00:00Z")
        XCTAssertNil(ISO8601UTC.parse("9999-12-31T23:59:59.9999999Z"))
        XCTAssertNil(ISO8601UTC.parse("0000-01-01T00:00:00Z"))
        XCTAssertNotNil(ISO8601UTC.parse("9999-12-31T23:59:59Z"))
        XCTAssertNotNil(ISO8601UTC.parse("0001-01-01T00:00:00Z"))
    }
}

/// XML dates the way Foundation writes them.
final class XMLDateTests: XCTestCase {
    func testXMLDatesAreWholeSecondsAndReadableByFoundation() throws {
        let bytes = PlistFile.encode(.dictionary(["d": .date(Date(timeIntervalSince1970: 1_717_243_200.75))]), as: .xml)
        XCTAssertTrue(String(decoding: bytes, as: UTF8.self).contains("<date>2024-06-01T12:00:00Z</date>"))
        let read = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil) as? [String: Any]
        XCTAssertEqual((read?["d"] as? Date)?.timeIntervalSince1970, 1_717_243_200)
    }

    func testFractionsComeBackOnlyWhereTheFileKeptTheWholeSecond() {
        let precise = Date(timeIntervalSince1970: 100.5)
        let stored: Value = .dictionary(["d": .date(precise), "list": .array([.date(precise)]), "other": .date(precise)])
        let read: Value = .dictionary([
            "d": .date(Date(timeIntervalSince1970: 100)), "list": .array([.date(Date(timeIntervalSince1970: 100))]),
            "other": .date(Date(timeIntervalSince1970: 200)),
        ])
        XCTAssertEqual(PlistFile.restoringSubsecondDates(read, from: stored), .dictionary([
            "d": .date(precise), "list": .array([.date(precise)]), "other": .date(Date(timeIntervalSince1970: 200)),
        ]))
    }
}
