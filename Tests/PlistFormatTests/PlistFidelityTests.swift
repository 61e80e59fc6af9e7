import Foundation
import SyncProtocol
import XCTest
@testable import PlistFormat

/// Issue 43: plists other readers accept are read as they are, never changed on the way: the
/// whole integer range, XML in UTF-16, binary plists with odd reference widths.
final class PlistFidelityTests: XCTestCase {
    private static let twoTo63Plus44 = UInt64(1) << 63 + 44

    private func binaryPlist(_ objects: [[UInt8]], offsetSize: Int = 1, referenceSize: Int = 1) -> [UInt8] {
        BinaryPlistBuilder.file(objects, offsetSize: offsetSize, referenceSize: referenceSize)
    }

    private func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        BinaryPlistBuilder.bigEndian(value, size: size)
    }

    /// `{"n": <16-byte integer high:low>}`, as Cocoa writes an integer above Int64.
    private func dictionaryWith16ByteInteger(high: UInt64, low: UInt64) -> [UInt8] {
        binaryPlist([[0xD1, 1, 2], [0x51, UInt8(ascii: "n")], [0x14] + bigEndian(high, size: 8) + bigEndian(low, size: 8)])
    }

    private func field(_ bytes: [UInt8], _ key: String = "n") throws -> Value? {
        guard case .dictionary(let fields) = try PlistFile.decode(bytes).0 else { XCTFail("not a dictionary"); return nil }
        return fields[key]
    }

    func testIntegersAboveInt64AreReadFromBinaryAsTheyAre() throws {
        // CPython's TESTDATA aBigInt2 (2^63 + 44) and the Rust crate's BiggestNumber (2^64 - 1):
        // read as -9223372036854775764 and -1 before.
        XCTAssertEqual(try field(dictionaryWith16ByteInteger(high: 0, low: Self.twoTo63Plus44)), .unsigned(Self.twoTo63Plus44))
        XCTAssertEqual(try field(dictionaryWith16ByteInteger(high: 0, low: .max)), .largeInteger(LargeInteger(.max)!))
        // Small values in 16 bytes, and negative ones sign-extended, are the same integers.
        XCTAssertEqual(try field(dictionaryWith16ByteInteger(high: 0, low: 5)), .integer(5))
        XCTAssertEqual(try field(dictionaryWith16ByteInteger(high: .max, low: UInt64(bitPattern: -5))), .integer(-5))
        XCTAssertEqual(try field(dictionaryWith16ByteInteger(high: .max, low: UInt64(bitPattern: Int64.min))), .integer(.min))
    }

    func testIntegersOutsideThePlistRangeAreRefusedNotWrapped() {
        for (high, low) in [(UInt64(1), UInt64(0)), (.max, UInt64(Int64.max)), (UInt64(1) << 63, 0)] {
            XCTAssertThrowsError(try PlistFile.decode(dictionaryWith16ByteInteger(high: high, low: low)), "\(high):\(low)") { error in
                XCTAssertTrue("\(error)".contains("outside -9223372036854775808...18446744073709551615"), "\(error)")
            }
        }
        for text in ["18446744073709551616", "-9223372036854775809", "99999999999999999999999"] {
            XCTAssertThrowsError(try PlistFile.decode(Array("<plist><integer>\(text)</integer></plist>".utf8))) { error in
                XCTAssertTrue("\(error)".contains("<integer> \(text) is outside"), "\(error)")
            }
        }
    }

    func testIntegersAboveInt64AreReadFromXML() throws {
        let xml = "<plist><dict><key>n</key><integer>9223372036854775852</integer><key>m</key><integer>18446744073709551615</integer><key>h</key><integer>0xFFFFFFFFFFFFFFFF</integer></dict></plist>"
        let bytes = Array(xml.utf8)
        XCTAssertEqual(try field(bytes, "n"), .unsigned(Self.twoTo63Plus44))
        XCTAssertEqual(try field(bytes, "m"), .unsigned(.max))
        XCTAssertEqual(try field(bytes, "h"), .unsigned(.max))
    }

    /// Both writers carry the whole range bit-exact, and Foundation's reader agrees on the
    /// binary form (its XML reader on Linux stops at Int64).
    func testTheWholeIntegerRangeRoundTripsInBothFormats() throws {
        let integers: [Value] = [.integer(.min), .integer(-1), .integer(0), .integer(Int64(UInt32.max)), .integer(.max),
                                 .unsigned(UInt64(Int64.max) + 1), .unsigned(Self.twoTo63Plus44), .unsigned(.max)]
        let record = Value.dictionary(Dictionary(uniqueKeysWithValues: integers.enumerated().map { ("k\($0.offset)", $0.element) }))
        for format in [PlistFile.Format.xml, .binary] {
            let bytes = PlistFile.encode(record, as: format)
            XCTAssertEqual(try PlistFile.decode(bytes).0, record, "\(format)")
        }
        let xml = String(decoding: PlistFile.encode(.dictionary(["n": .unsigned(.max)]), as: .xml), as: UTF8.self)
        XCTAssertTrue(xml.contains("<integer>18446744073709551615</integer>"), xml)
        let binary = PlistFile.encode(.dictionary(["n": .unsigned(Self.twoTo63Plus44)]), as: .binary)
        XCTAssertNotNil(binary.firstRange(of: [0x14] + bigEndian(0, size: 8) + bigEndian(Self.twoTo63Plus44, size: 8)), "\(binary)")
    }

    func testKeyedArchivesCarryIntegersAboveInt64() throws {
        let records: [[String: Value]] = [["serial": .unsigned(.max), "count": .integer(-3)]]
        for shape in [KeyedArchive.Shape(), KeyedArchive.Shape(elementClasses: ["Item", "NSObject"])] {
            let (root, _) = try PlistFile.decode(KeyedArchive.encode(records, shape: shape))
            XCTAssertEqual(try KeyedArchive.records(in: root).records, records)
        }
    }

    func testXMLInUTF16AndUTF8WithAMarkIsRead() throws {
        let text = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<plist version=\"1.0\"><dict><key>name</key><string>Zoë 🎉</string></dict></plist>\n"
        let utf16 = Array(text.utf16)
        let bigEndian = utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let littleEndian = utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let encodings: [(String, [UInt8])] = [
            ("UTF-16BE with a mark", [0xFE, 0xFF] + bigEndian), ("UTF-16LE with a mark", [0xFF, 0xFE] + littleEndian),
            ("UTF-16BE without", bigEndian), ("UTF-16LE without", littleEndian), ("UTF-8 with a mark", [0xEF, 0xBB, 0xBF] + Array(text.utf8)),
        ]
        for (name, bytes) in encodings {
            let (value, format) = try PlistFile.decode(bytes)
            XCTAssertEqual(format, .xml, name)
            XCTAssertEqual(value, .dictionary(["name": .string("Zoë 🎉")]), name)
            XCTAssertTrue(String(decoding: PlistFile.encode(value, as: format), as: UTF8.self).hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"))
        }
        // A lone surrogate, or an odd byte, is refused, not replaced or guessed at, with or without a mark.
        for broken in [[0xFE, 0xFF] + Array(bigEndian.prefix(20)) + [0xD8, 0x00] + Array(bigEndian.dropFirst(20)),
                       Array(littleEndian.prefix(20)) + [0x00, 0xD8] + Array(littleEndian.dropFirst(20)), littleEndian + [0x0A]] {
            XCTAssertThrowsError(try PlistFile.decode(broken)) { error in
                XCTAssertTrue("\(error)".contains("UTF-16 text that does not decode"), "\(error)")
            }
        }
    }

    /// CPython's test_nonstandard_refs_size: 3-byte references and offsets.
    func testBinaryReferencesOfAnyWidthAreRead() throws {
        let cpython: [UInt8] = Array("bplist00".utf8) + [0xD1, 0, 0, 1, 0, 0, 2, 0x51, 0x61, 0x51, 0x62, 0, 0, 8, 0, 0, 0x0F, 0, 0, 0x11,
                                                         0, 0, 0, 0, 0, 0, 3, 3] + bigEndian(3, size: 8) + bigEndian(0, size: 8) + bigEndian(0x13, size: 8)
        XCTAssertEqual(try PlistFile.decode(cpython).0, .dictionary(["a": .string("b")]))
        for width in 1...8 {
            let dictionary: [UInt8] = [0xD1] + bigEndian(1, size: width) + bigEndian(2, size: width)
            let bytes = binaryPlist([dictionary, [0x51, UInt8(ascii: "a")], [0x51, UInt8(ascii: "b")]], offsetSize: width, referenceSize: width)
            XCTAssertEqual(try PlistFile.decode(bytes).0, .dictionary(["a": .string("b")]), "width \(width)")
        }
        XCTAssertThrowsError(try PlistFile.decode(binaryPlist([[0x51, 0x61]], referenceSize: 9)))
    }

    /// Text in a binary plist that is not what it claims is refused, never patched with U+FFFD.
    func testBinaryStringsThatAreNotTextAreRefused() {
        XCTAssertThrowsError(try PlistFile.decode(binaryPlist([[0x52, 0xC3, 0x28]])))
        XCTAssertThrowsError(try PlistFile.decode(binaryPlist([[0x61, 0xD8, 0x00]])))
        XCTAssertEqual(try PlistFile.decode(binaryPlist([[0x62, 0xD8, 0x3C, 0xDF, 0x89]])).0, .string("🎉"))
    }

    /// plistlib writes UIDs up to 2^64 - 1 (test_uid); they were refused above Int64.max and
    /// written back as dictionaries above 2^32.
    func testUIDsOfEveryWidthReadAndWriteBackAsUIDs() throws {
        for uid in [UInt64(0), 255, 1 << 32, 1 << 63, .max] {
            let width = uid <= 0xFF ? 1 : uid <= 0xFFFF_FFFF ? 4 : 8
            let bytes = binaryPlist([[0x80 | UInt8(width - 1)] + bigEndian(uid, size: width)])
            let (value, _) = try PlistFile.decode(bytes)
            XCTAssertEqual(value, .dictionary([PlistFile.uidKey: .unsigned(uid)]), "\(uid)")
            XCTAssertEqual(PlistFile.encode(value, as: .binary)[8], 0x80 | UInt8(width - 1), "\(uid) is written back as a UID")
        }
    }

    /// XML readers that follow the XML spec (expat, so plistlib) read a raw CR as LF; a
    /// reference keeps it for every reader.
    func testCarriageReturnsAreWrittenAsCharacterReferences() throws {
        let value = Value.dictionary(["note": .string("one\r\ntwo\rthree")])
        let xml = String(decoding: PlistFile.encode(value, as: .xml), as: UTF8.self)
        XCTAssertTrue(xml.contains("<string>one&#13;\ntwo&#13;three</string>"), xml)
        XCTAssertFalse(xml.utf8.contains(0x0D))
        XCTAssertEqual(try PlistFile.decode(Array(xml.utf8)).0, value)
    }
}
