import XCTest
@testable import SyncProtocol

final class RequestParserTests: XCTestCase {
    private func parse(_ text: String) throws -> RequestLine? {
        try RequestParser.parse(Array(text.utf8))
    }

    private func errorOf(_ text: String) -> LineParseError? {
        do {
            _ = try RequestParser.parse(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    func testTagVerbArgumentsAndPayload() throws {
        let line = try XCTUnwrap(parse(#"t1 put contacts "Ada Lovelace" 0 {"name":"Ada","n":1}"#))
        XCTAssertEqual(line.tag, "t1")
        XCTAssertEqual(line.verb, "PUT")
        XCTAssertEqual(line.arguments, ["contacts", "Ada Lovelace", "0"])
        XCTAssertEqual(line.payload, ["name": .string("Ada"), "n": .integer(1)])
    }

    func testBlankLinesAreIgnoredAndSpacesFolded() throws {
        XCTAssertNil(try parse(""))
        XCTAssertNil(try parse("   "))
        XCTAssertEqual(try parse("  a   PING  ")?.verb, "PING")
    }

    func testQuotedArgumentsWithEscapes() throws {
        XCTAssertEqual(try parse(#"a AUTH "bob smith" "pa ss\"word""#)?.arguments, ["bob smith", "pa ss\"word"])
        XCTAssertEqual(try parse(#"a GET c """#)?.arguments, ["c", ""])
    }

    func testUnreadableTagIsUntagged() {
        for text in ["!! PING", String(repeating: "x", count: 33) + " PING", "\"q\" PING", "ta\u{01}g PING"] {
            guard case .untagged(let error)? = errorOf(text) else { return XCTFail("expected untagged error for \(text)") }
            XCTAssertEqual(error.code, .badRequest)
        }
    }

    func testTaggedErrors() {
        let cases = [
            "a", "a PUT c x 0 {\"a\":", "a PUT c x 0 {} extra", "a GET \"unterminated", "a GET \"x\"y",
            "a GE\"T", "a GET c \u{7F}",
        ]
        for text in cases {
            guard case .tagged(let tag, let error)? = errorOf(text) else { return XCTFail("expected tagged error for \(text)") }
            XCTAssertEqual(tag, "a")
            XCTAssertEqual(error.code, .badRequest, text)
        }
    }

    func testInvalidUTF8IsRefusedWithTag() {
        var bytes = Array("a GET c ".utf8)
        bytes.append(contentsOf: [0xFF, 0xFE])
        XCTAssertThrowsError(try RequestParser.parse(bytes)) { error in
            XCTAssertEqual(error as? LineParseError, .tagged("a", ProtocolError(.badRequest, "line is not valid UTF-8")))
        }
    }

    func testResponseArgumentsQuoteWhenNeeded() {
        XCTAssertEqual(ResponseLine.argument("Ada"), "Ada")
        XCTAssertEqual(ResponseLine.argument("Ada Lovelace"), #""Ada Lovelace""#)
        XCTAssertEqual(ResponseLine.argument(""), #""""#)
        XCTAssertEqual(ResponseLine.error("t", ProtocolError(.badRequest, "a\r\nb")), "t ERR BAD_REQUEST a  b\n")
    }
}

final class ServerLineTests: XCTestCase {
    func testUntaggedChangeWithQuotedIdAndFields() throws {
        let line = try ServerLine.parse(Array(#"* CHANGE contacts 4 "Ada L" 2 a0 {"phone":"1"}"#.utf8))
        XCTAssertNil(line.tag)
        XCTAssertEqual(line.words, ["CHANGE", "contacts", "4", "Ada L", "2", "a0"])
        XCTAssertEqual(line.payload, ["phone": .string("1")])
    }

    func testTaggedErrorKeepsItsText() throws {
        let line = try ServerLine.parse(Array("t7 ERR FORBIDDEN bob has no access".utf8))
        XCTAssertEqual(line.tag, "t7")
        XCTAssertEqual(line.words, ["ERR", "FORBIDDEN", "bob", "has", "no", "access"])
    }
}
