import Foundation
import XCTest
@testable import SyncProtocol

final class ValueJSONTests: XCTestCase {
    private func roundTrip(_ value: Value, file: StaticString = #filePath, line: UInt = #line) throws {
        let text = ValueJSON.encode(value)
        XCTAssertEqual(try ValueJSON.decode(Array(text.utf8)), value, "through \(text)", file: file, line: line)
    }

    func testEveryTypeRoundTrips() throws {
        try roundTrip(.string("Ada Lovelace"))
        try roundTrip(.string("quotes \" backslash \\ newline \n tab \t control \u{01} emoji 🎉"))
        try roundTrip(.integer(0))
        try roundTrip(.integer(Int64.max))
        try roundTrip(.integer(Int64.min))
        try roundTrip(.real(1.0))
        try roundTrip(.real(-0.5))
        try roundTrip(.real(1e300))
        try roundTrip(.real(1.5e-7))
        try roundTrip(.bool(true))
        try roundTrip(.bool(false))
        try roundTrip(.date(Date(timeIntervalSince1970: 0)))
        try roundTrip(.date(Date(timeIntervalSince1970: 1_577_836_800.125)))
        try roundTrip(.date(Date(timeIntervalSince1970: -86_400 * 365 * 100)))
        try roundTrip(.data(Data([0, 1, 2, 255])))
        try roundTrip(.data(Data()))
        try roundTrip(.array([]))
        try roundTrip(.dictionary([:]))
    }

    func testNestingRoundTrips() throws {
        let inventory: Value = .dictionary([
            "name": .string("Laptop"),
            "serial": .string("SN-123"),
            "value": .integer(1200),
            "created": .date(Date(timeIntervalSince1970: 1_600_000_000)),
            "tags": .array([.string("a"), .integer(1), .real(1.0), .array([.dictionary(["deep": .bool(true)])])]),
            "$price": .dictionary(["$$twice": .data(Data([9]))]),
            "$date": .string("not a date, just a key"),
        ])
        try roundTrip(inventory)
    }

    func testIntegerAndRealStayDistinct() throws {
        XCTAssertEqual(ValueJSON.encode(.integer(1)), "1")
        XCTAssertEqual(ValueJSON.encode(.real(1.0)), "1.0")
        XCTAssertEqual(try ValueJSON.decode(Array("1".utf8)), .integer(1))
        XCTAssertEqual(try ValueJSON.decode(Array("1.0".utf8)), .real(1.0))
        XCTAssertEqual(try ValueJSON.decode(Array("1e2".utf8)), .real(100))
        XCTAssertNotEqual(try ValueJSON.decode(Array("1".utf8)), try ValueJSON.decode(Array("1.0".utf8)))
    }

    /// Issue 43: JSON carries the whole plist integer range as integers, and refuses (never
    /// wraps or rounds) what lies outside it.
    func testIntegersRunFromMinusTwoTo63ToTwoTo64MinusOne() throws {
        for (text, value) in [("18446744073709551615", Value.unsigned(.max)), ("9223372036854775808", .unsigned(UInt64(Int64.max) + 1)),
                              ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min))] {
            XCTAssertEqual(try ValueJSON.decode(Array(text.utf8)), value, text)
            XCTAssertEqual(ValueJSON.encode(value), text)
        }
        XCTAssertEqual(try ValueJSON.decodeFields(Array(#"{"serial":18446744073709551615}"#.utf8)), ["serial": .largeInteger(LargeInteger(.max)!)])
        for text in ["18446744073709551616", "-9223372036854775809"] {
            XCTAssertThrowsError(try ValueJSON.decode(Array(text.utf8)), text) { error in
                XCTAssertTrue("\(error)".contains("integer outside -9223372036854775808...18446744073709551615"), "\(error)")
            }
        }
        XCTAssertNil(LargeInteger(UInt64(Int64.max)), "one spelling per integer")
    }

    func testTypedObjectsAndDollarKeys() throws {
        XCTAssertEqual(try ValueJSON.decode(Array(#"{"$date":"2020-01-01T00:00:00Z"}"#.utf8)), .date(Date(timeIntervalSince1970: 1_577_836_800)))
        XCTAssertEqual(try ValueJSON.decode(Array(#"{"$data":"AAE="}"#.utf8)), .data(Data([0, 1])))
        XCTAssertEqual(try ValueJSON.decode(Array(#"{"$$a":1}"#.utf8)), .dictionary(["$a": .integer(1)]))
        XCTAssertEqual(ValueJSON.encode(.dictionary(["$a": .integer(1)])), #"{"$$a":1}"#)
    }

    func testMalformedJSONIsRefused() {
        let bad = [
            "null", "{\"a\":null}", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "\"unterminated", "{\"a\":1,\"a\":2}",
            "{\"$date\":\"yesterday\"}", "{\"$data\":\"***\"}", "{\"$x\":1}", "tru", "99999999999999999999", "1e999",
            "\"\\ud800\"", "\"\u{01}\"", "[1] 2", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        ]
        for text in bad {
            XCTAssertThrowsError(try ValueJSON.decode(Array(text.utf8)), text) { error in
                XCTAssertEqual((error as? ProtocolError)?.code, .badRequest, text)
            }
        }
    }

    func testISODatesWithFractions() {
        XCTAssertEqual(ISO8601UTC.format(Date(timeIntervalSince1970: 951_782_400)), "2000-02-29T00:00:00Z")
        XCTAssertEqual(ISO8601UTC.parse("2000-02-29T12:30:45.5Z"), Date(timeIntervalSince1970: 951_827_445.5))
        XCTAssertNil(ISO8601UTC.parse("2001-02-29T00:00:00Z"))
        XCTAssertNil(ISO8601UTC.parse("2001-01-01 00:00:00Z"))
        XCTAssertNil(ISO8601UTC.parse("2001-01-01T00:00:00+01:00"))
    }
}

/// A reply line a client cannot read must still answer its request (issue 8 item 8).
final class UnreadableReplyTests: XCTestCase {
    func testAnUnreadableTaggedReplyAnswersItsTagWithAnError() {
        let line = ServerLine.parseAnsweringTag(Array("r OK GET c d 1 a0 {\"d\":{\"$date\":\"10000-01-01T00:00:00Z\"}}".utf8))
        XCTAssertEqual(line?.tag, "r")
        XCTAssertEqual(line?.words.prefix(2), ["ERR", "INTERNAL"])
        XCTAssertNil(ServerLine.parseAnsweringTag(Array("* CHANGE c 1 d 1 a0 {\"d\":{\"$date\":\"x\"}}".utf8)))
        XCTAssertEqual(ServerLine.parseAnsweringTag(Array("r OK PONG".utf8))?.words, ["OK", "PONG"])
    }
}

/// Dates on the wire.
final class WireDateTests: XCTestCase {
    /// Issue 18 item 2: a date is the Double an app stored (seconds since 2001); written and
    /// read back it is that Double, bit for bit, with no more digits than that needs.
    func testDatesComeBackAsTheExactDoubleTheyWere() {
        var generator = SystemRandomNumberGenerator()
        let samples: [Double] = [700_000_000.123_456_789, -978_307_199.999_999_9, 0.1, 1e-9, Double.leastNonzeroMagnitude, 86_399.999_999_999_99, 252_423_993_599.5]
            + (0..<2_000).map { _ in Double.random(in: -60_000_000_000...250_000_000_000, using: &generator) }
        for seconds in samples {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let text = ISO8601UTC.format(date)
            XCTAssertEqual(ISO8601UTC.parse(text)?.timeIntervalSinceReferenceDate.bitPattern, seconds.bitPattern, "\(seconds) as \(text)")
        }
        // What a person typed keeps its digits.
        XCTAssertEqual(ISO8601UTC.parse("2020-01-01T00:00:00.123457Z").map(ISO8601UTC.format), "2020-01-01T00:00:00.123457Z")
        XCTAssertEqual(ISO8601UTC.parse("2020-01-01T00:00:00.5Z").map(ISO8601UTC.format), "2020-01-01T00:00:00.5Z")
        XCTAssertEqual(ISO8601UTC.format(Date(timeIntervalSinceReferenceDate: 700_000_000.25)), "2023-03-08T20:26:40.25Z")
    }
}
