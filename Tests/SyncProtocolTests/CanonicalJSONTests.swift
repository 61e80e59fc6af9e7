import Foundation
import XCTest

@testable import SyncProtocol

/// The PUT fast path may keep a payload's text only when decoding and encoding it again would
/// give the very same text; anything it is unsure of must go the slow way.
final class CanonicalJSONTests: XCTestCase {
    private var random = SystemRandomNumberGenerator()

    private func accepted(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return CanonicalJSON.objectEnd(bytes, from: 0) == bytes.count
    }

    private func reencoded(_ text: String) -> String? {
        (try? ValueJSON.decodeFields(text.utf8)).map { ValueJSON.encode(fields: $0) }
    }

    private func randomString(plain: Bool) -> String {
        let plainPool = Array("abcXYZ 019_-.:/,{}[]é€😀")
        let trickyPool = Array("\"\\\n\t\u{7F}\u{1}a$")
        let pool = plain ? plainPool : plainPool + trickyPool
        return String((0..<Int.random(in: 0...8, using: &random)).map { _ in pool.randomElement(using: &random)! })
    }

    /// Values of every kind; with `plain`, only the kinds the fast path recognises.
    private func randomValue(depth: Int, plain: Bool) -> Value {
        let kinds = plain ? 5 : 8
        switch Int.random(in: 0..<(depth > 3 ? 3 : kinds), using: &random) {
        case 0: return .string(randomString(plain: plain))
        case 1: return .integer([0, 1, -1, 42, Int64.max / 100_000, -987_654_321].randomElement(using: &random)!)
        case 2: return .bool(Bool.random(using: &random))
        case 3: return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in randomValue(depth: depth + 1, plain: plain) })
        case 4: return .dictionary(randomFields(depth: depth + 1, plain: plain))
        case 5: return .real([0.5, -2.0, 1e300, 3].randomElement(using: &random)!)
        case 6: return .date(Date(timeIntervalSince1970: 1_700_000_000.25))
        default: return .data(Data([1, 2, 3]))
        }
    }

    private func randomFields(depth: Int, plain: Bool) -> Fields {
        var fields: Fields = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            let key = plain ? "k" + String(Int.random(in: 0...30, using: &random)) : randomString(plain: false)
            fields[key] = randomValue(depth: depth, plain: plain)
        }
        return fields
    }

    func testEncodedPlainRecordsTakeTheFastPath() {
        for _ in 0..<2000 {
            let text = ValueJSON.encode(fields: randomFields(depth: 0, plain: true))
            XCTAssertTrue(accepted(text), text)
        }
    }

    func testWhateverIsAcceptedEncodesBackToItself() {
        let mutations: [(String) -> String] = [
            { $0 },
            { $0.replacingOccurrences(of: ",", with: ", ") },
            { $0.replacingOccurrences(of: ":", with: " :") },
            { $0.replacingOccurrences(of: "1", with: "01") },
            { $0.replacingOccurrences(of: "0", with: "-0") },
            { $0.replacingOccurrences(of: "42", with: "42.0") },
            { $0.replacingOccurrences(of: "42", with: "4e2") },
            { $0.replacingOccurrences(of: "k1\"", with: "k9\"") },
            { $0.replacingOccurrences(of: "a", with: "\\u0061") },
            { $0.replacingOccurrences(of: "true", with: "null") },
            { "{\"b\":1,\"a\":2" + $0.dropFirst() },
            { "{\"a\":1,\"a\":2" + $0.dropFirst() },
            { "{\"$date\":\"x\"" + $0.dropFirst() },
        ]
        var acceptedCount = 0
        for round in 0..<3000 {
            let text = ValueJSON.encode(fields: randomFields(depth: 0, plain: round % 2 == 0))
            for mutate in mutations {
                let candidate = mutate(text)
                guard accepted(candidate) else { continue }
                acceptedCount += 1
                XCTAssertEqual(reencoded(candidate), candidate, "accepted but not canonical: \(candidate)")
            }
        }
        XCTAssertGreaterThan(acceptedCount, 1000)
    }

    func testNonCanonicalShapesAreLeftToTheSlowPath() {
        for text in [#"{"b":1,"a":2}"#, #"{"a":1,"a":1}"#, #"{ "a":1}"#, #"{"a":1.5}"#, #"{"a":-0}"#, #"{"a":007}"#,
                     #"{"a":"x\ny"}"#, #"{"$date":"2020-01-01T00:00:00Z"}"#, #"{"é":1}"#, #"{"a":null}"#,
                     #"{"a":1234567890123456789}"#, #"{"a":[1,]}"#, #"{"a":1"#] {
            XCTAssertFalse(accepted(text), text)
        }
        XCTAssertTrue(accepted(#"{"a":[1,{"b":"é"}],"b":-12,"c":true,"d":{}}"#))
    }

    func testAPutLineCarriesCanonicalTextEitherWay() throws {
        let fast = try XCTUnwrap(try RequestParser.parse(Array(#"t PUT c id 0 {"a":2,"b":"x"}"#.utf8)))
        let slow = try XCTUnwrap(try RequestParser.parse(Array(#"t PUT c id 0 { "b" : "x", "a" : 2 }"#.utf8)))
        XCTAssertEqual(fast.payloadJSON, #"{"a":2,"b":"x"}"#)
        XCTAssertEqual(slow.payloadJSON, fast.payloadJSON)
        XCTAssertEqual(fast.payload, ["a": .integer(2), "b": .string("x")])
        XCTAssertEqual(fast, slow)
    }
}
