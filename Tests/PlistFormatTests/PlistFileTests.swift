import Foundation
import SyncProtocol
import XCTest
@testable import PlistFormat

final class PlistFileTests: XCTestCase {
    private let inventory: Value = .dictionary([
        "name": .string("Laptop <Pro> & \"Air\""),
        "serial": .string("SN-12345"),
        "value": .integer(1200),
        "negative": .integer(-7),
        "huge": .integer(Int64.max),
        "price": .real(1199.99),
        "whole real": .real(2.0),
        "created": .date(Date(timeIntervalSince1970: 1_600_000_000)),
        "active": .bool(true),
        "retired": .bool(false),
        "photo": .data(Data((0..<300).map { UInt8($0 % 256) })),
        "tags": .array([.string("a"), .string("ünïcödé 🎉"), .array([]), .dictionary([:])]),
        "long": .string(String(repeating: "x", count: 40)),
        "owner": .dictionary(["name": .string("Ada"), "phone": .string("555")]),
    ])

    func testBothFormatsRoundTripEveryType() throws {
        for format in [PlistFile.Format.xml, .binary] {
            let bytes = PlistFile.encode(inventory, as: format)
            let (value, detected) = try PlistFile.decode(bytes)
            XCTAssertEqual(detected, format)
            XCTAssertEqual(value, inventory, "\(format)")
        }
    }

    /// Issue 18 item 2: a binary plist stores a date as the Double of seconds since 2001, and
    /// that Double comes back bit for bit, both ways (through 1970 it lost up to a bit).
    func testBinaryDatesAreTheExactDoubleFoundationWrote() throws {
        for seconds in [700_000_000.123_456_789, 600_000_000.987_654_321, -123_456_789.000_000_1, 710_000_000.000_001_5] {
            let data = try PropertyListSerialization.data(fromPropertyList: ["when": Date(timeIntervalSinceReferenceDate: seconds)], format: .binary, options: 0)
            guard case .dictionary(let fields) = try PlistFile.decode(Array(data)).0, case .date(let date)? = fields["when"] else { return XCTFail("no date") }
            XCTAssertEqual(date.timeIntervalSinceReferenceDate.bitPattern, seconds.bitPattern, "\(seconds)")
            let written = PlistFile.encode(.dictionary(["when": .date(Date(timeIntervalSinceReferenceDate: seconds))]), as: .binary)
            let read = try PropertyListSerialization.propertyList(from: Data(written), format: nil) as? [String: Any]
            XCTAssertEqual((read?["when"] as? Date)?.timeIntervalSinceReferenceDate.bitPattern, seconds.bitPattern, "\(seconds)")
        }
    }

    func testReadsFoundationsOwnOutput() throws {
        let object: [String: Any] = ["name": "Ada", "number": 1, "ratio": 0.5, "ok": true,
                                     "when": Date(timeIntervalSince1970: 0), "bytes": Data([1, 2]), "list": ["x", 2]]
        for (format, expected) in [(PropertyListSerialization.PropertyListFormat.xml, PlistFile.Format.xml), (.binary, .binary)] {
            let data = try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0)
            let (value, detected) = try PlistFile.decode(Array(data))
            XCTAssertEqual(detected, expected)
            guard case .dictionary(let fields) = value else { return XCTFail("not a dictionary") }
            XCTAssertEqual(fields["name"], .string("Ada"))
            XCTAssertEqual(fields["ratio"], .real(0.5))
            XCTAssertEqual(fields["when"], .date(Date(timeIntervalSince1970: 0)))
            XCTAssertEqual(fields["bytes"], .data(Data([1, 2])))
            XCTAssertEqual(fields["list"], .array([.string("x"), .integer(2)]))
        }
    }

    func testFoundationReadsWhatWeWrite() throws {
        for format in [PlistFile.Format.xml, .binary] {
            let data = Data(PlistFile.encode(.dictionary(["name": .string("Ada"), "n": .integer(3), "items": .array([.real(1.5)])]), as: format))
            let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any]
            XCTAssertEqual(object?["name"] as? String, "Ada")
            XCTAssertEqual((object?["items"] as? [Any])?.first as? Double, 1.5)
        }
    }

    func testBinaryFilesShareEqualScalarsAsFoundationDoesAndKeepEachZerosSign() throws {
        let rows: Value = .array((0..<200).map { .dictionary(["name": .string("row \($0 % 10)"), "kind": .string("item"), "n": .integer(Int64($0 % 3))]) })
        let bytes = PlistFile.encode(rows, as: .binary)
        XCTAssertEqual(try PlistFile.decode(bytes).0, rows)
        let foundation = try PropertyListSerialization.data(fromPropertyList: try PropertyListSerialization.propertyList(from: Data(bytes), format: nil),
                                                             format: .binary, options: 0)
        XCTAssertLessThanOrEqual(bytes.count, foundation.count + 64, "keys and repeated values are written once, as in Foundation's file")
        let zeros: Value = .array([.real(0), .real(-0.0), .real(0)])
        guard case .array(let back) = try PlistFile.decode(PlistFile.encode(zeros, as: .binary)).0 else { return XCTFail("not an array") }
        XCTAssertEqual(back.map { value -> FloatingPointSign? in if case .real(let real) = value { real.sign } else { nil } }, [.plus, .minus, .plus])
    }

    /// Two spellings of the same text (Unicode normalisation) are equal `Value`s but different
    /// strings: a binary file that shared them wrote the first spelling for both.
    func testBinaryFilesKeepEachSpellingOfTheSameText() throws {
        let spellings = ["Zo\u{00EB}", "Zoe\u{0308}"]
        for format in [PlistFile.Format.binary, .xml] {
            guard case .array(let back) = try PlistFile.decode(PlistFile.encode(.array(spellings.map(Value.string)), as: format)).0 else {
                return XCTFail("not an array")
            }
            XCTAssertEqual(back.map { value -> [UInt8] in if case .string(let text) = value { Array(text.utf8) } else { [] } },
                           spellings.map { Array($0.utf8) }, "\(format)")
        }
    }

    func testHandWrittenXMLWithCommentsEntitiesAndCDATA() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a contact -->
            <plist version="1.0"><dict>
              <key>name</key><string>Ada &amp; &#x42;ob &lt;3</string>
              <key>note</key><string><![CDATA[<raw> & stuff]]></string>
              <key>age</key><integer> 36 </integer>
              <key>empty</key><string/>
            </dict></plist>
            """
        let (fields, _) = try PlistFile.decodeRecord(Array(text.utf8))
        XCTAssertEqual(fields, ["name": .string("Ada & Bob <3"), "note": .string("<raw> & stuff"), "age": .integer(36), "empty": .string("")])
    }

    func testBrokenFilesAreRefusedNotCrashed() {
        let xml = Array(PlistFile.encode(inventory, as: .xml))
        let binary = PlistFile.encode(inventory, as: .binary)
        // Every truncation of a valid file is an error (a half-written save), never a crash.
        for cut in stride(from: 0, to: xml.count - 10, by: 7) {
            XCTAssertThrowsError(try PlistFile.decode(Array(xml[..<cut])), "xml cut at \(cut)")
        }
        for cut in 0..<(binary.count - 1) {
            _ = try? PlistFile.decode(Array(binary[..<cut]))
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var mutated = binary
            for _ in 0..<3 { mutated[Int.random(in: 8..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            _ = try? PlistFile.decode(mutated)
        }
        XCTAssertThrowsError(try PlistFile.decodeRecord(PlistFile.encode(.array([]), as: .xml)))
        XCTAssertThrowsError(try PlistFile.decode(Array("not a plist".utf8)))
        XCTAssertThrowsError(try PlistFile.decode([0xFF, 0xFE, 0x00]))
    }
}
