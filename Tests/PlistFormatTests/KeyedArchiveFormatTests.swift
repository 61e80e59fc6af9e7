import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// UIDs and keyed archives, without Foundation's archiver: shape, round trip and hostile input.
final class KeyedArchiveFormatTests: XCTestCase {
    func testAUIDIsReadAsXMLSpellsItAndWrittenBackAsAUID() throws {
        let value = Value.array([PlistFile.uidValue(5), PlistFile.uidValue(70_000), .dictionary(["CF$UID": .integer(-1)])])
        let binary = PlistFile.encode(value, as: .binary)
        XCTAssertTrue(binary.contains(0x80), "a one-byte UID marker")
        XCTAssertEqual(try PlistFile.decode(binary).0, value)
        XCTAssertEqual(try PlistFile.decode(PlistFile.encode(value, as: .xml)).0, value)
    }

    func testRecordsRoundTripThroughAnArchiveOfCustomObjects() throws {
        let records: [[String: Value]] = [
            ["name": .string("Bear"), "value": .integer(42), "when": .date(Date(timeIntervalSinceReferenceDate: 1.5)),
             "tags": .array([.string("a")]), "size": .dictionary(["w": .real(1.5)]), "photo": .data(Data([1, 2]))],
            ["name": .string("Bike"), "value": .integer(350), "when": .date(Date(timeIntervalSinceReferenceDate: 2))],
        ]
        let shape = KeyedArchive.Shape(topKey: "Items", elementClasses: ["BNRItem", "NSObject"])
        let reread = try PlistFile.decode(KeyedArchive.encode(records, shape: shape)).0
        XCTAssertTrue(KeyedArchive.isArchive(reread))
        let (back, backShape) = try KeyedArchive.records(in: reread)
        XCTAssertEqual(backShape, shape)
        XCTAssertEqual(back, records, "keys only some objects have come back absent, not null")
    }

    func testHostileArchivesAreRefusedNotTrapped() {
        let cycle: Value = .dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$top": .dictionary(["root": PlistFile.uidValue(1)]),
            "$objects": .array([.string("$null"), .dictionary(["NS.objects": .array([PlistFile.uidValue(1)]), "$class": PlistFile.uidValue(2)]),
                                .dictionary(["$classname": .string("NSArray")])]),
        ])
        XCTAssertThrowsError(try KeyedArchive.records(in: cycle)) { XCTAssertTrue("\($0)".contains("contains itself"), "\($0)") }
        let outOfRange: Value = .dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$top": .dictionary(["root": PlistFile.uidValue(9)]), "$objects": .array([.string("$null")]),
        ])
        XCTAssertThrowsError(try KeyedArchive.records(in: outOfRange)) { XCTAssertTrue("\($0)".contains("out of range"), "\($0)") }
        // 40 arrays, each holding the next twice: 2^40 paths through 42 objects.
        var objects: [Value] = [.string("$null"), .dictionary(["$classname": .string("NSArray")])]
        for level in 0..<40 {
            let next = PlistFile.uidValue(level == 39 ? 0 : UInt64(objects.count + 1))
            objects.append(.dictionary(["NS.objects": .array([next, next]), "$class": PlistFile.uidValue(1)]))
        }
        let doubling: Value = .dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$top": .dictionary(["root": PlistFile.uidValue(2)]), "$objects": .array(objects),
        ])
        XCTAssertThrowsError(try KeyedArchive.records(in: doubling)) { XCTAssertTrue("\($0)".contains("more than"), "\($0)") }
    }
}
