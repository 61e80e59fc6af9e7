import HTTPKit
import SyncProtocol
import XCTest

@testable import ServerKit

/// The API's pure parts: routing patterns, error statuses, device names, record JSON.
final class HTTPAPITableTests: XCTestCase {
    func testPatternsCaptureOneSegmentEachAndNeedTheWholePath() {
        XCTAssertEqual(HTTPAPI.match(["collections", "*", "records", "*"], ["collections", "c", "records", "desk lamp"]), ["c", "desk lamp"])
        XCTAssertNil(HTTPAPI.match(["collections", "*"], ["collections", "c", "records"]))
        XCTAssertNil(HTTPAPI.match(["collections", "*", "members"], ["collections", "c", "records"]))
        XCTAssertEqual(HTTPAPI.match(["status"], ["status"]), [])
    }

    func testNoTwoRoutesTakeTheSameMethodAndPath() {
        let routes = HTTPAPI().routes
        let keys = routes.map { $0.method + " /" + $0.pattern.joined(separator: "/") }
        XCTAssertEqual(Set(keys).count, keys.count, "\(keys)")
        XCTAssertEqual(routes.filter { !$0.needsLogin }.map(\.pattern), [["login"]], "only login is open")
    }

    func testEveryLineErrorCodeHasAClientOrServerErrorStatus() {
        for code in ErrorCode.allCases {
            let status = APIResponse.status(of: code)
            XCTAssertTrue((400..<600).contains(status), "\(code)")
            XCTAssertEqual(status >= 500, code.isTemporary && code != .rateLimited && code != .quota, "\(code) \(status)")
        }
        XCTAssertEqual(APIResponse.status(of: .conflict), 409)
        XCTAssertEqual(APIResponse.status(of: .authFailed), 401)
    }

    func testDevicesAreNamedByBrowserAndSystem() {
        XCTAssertEqual(HTTPAPI.deviceName(userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"), "Chrome on Linux")
        XCTAssertEqual(HTTPAPI.deviceName(userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1"), "Safari on iPhone")
        XCTAssertEqual(HTTPAPI.deviceName(userAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36 Edg/120.0"), "Edge on Windows")
        XCTAssertEqual(HTTPAPI.deviceName(userAgent: "curl/7.88.1"), "curl")
        XCTAssertEqual(HTTPAPI.deviceName(userAgent: "python-requests/2.31"), "python-requests")
    }

    /// The spliced text is the same JSON, byte for byte, as encoding the decoded record.
    func testRecordTextSplicesTheServersFieldsAsTheyAre() throws {
        let lines = [
            #"* CHANGE c 7 "desk \"lamp\"" 3 a0 {"$$price":1.0,"created":{"$date":"2024-05-01T09:30:00Z"},"n":[1,2.5,true],"name":"Désk"}"#,
            "* CHANGE c 8 laptop 4 - DELETED",
            #"* CHANGE c 9 ☕ 1 Zz {}"#,
        ]
        let expected = [
            #"{"fields":{"$$price":1.0,"created":{"$date":"2024-05-01T09:30:00Z"},"n":[1,2.5,true],"name":"Désk"},"id":"desk \"lamp\"","position":"a0","rev":3,"seq":7}"#,
            #"{"deleted":true,"id":"laptop","rev":4,"seq":8}"#,
            #"{"fields":{},"id":"☕","position":"Zz","rev":1,"seq":9}"#,
        ]
        for (text, json) in zip(lines, expected) {
            let kept = try ServerLine.parse(Array(text.utf8), keepingPayloadText: true)
            XCTAssertEqual(APIResponse.recordText(kept, from: 3, seq: kept.words[2]), json, text)
            // Canonical: encoding the decoded object gives the same bytes.
            XCTAssertEqual(ValueJSON.encode(try ValueJSON.decode(Array(json.utf8))), json)
        }
        let copy = try ServerLine.parse(Array(#"* RECORD c~conflicts Ada.sync-conflict-x 1 a0 {"n":1}"#.utf8), keepingPayloadText: true)
        XCTAssertEqual(APIResponse.recordText(copy, from: 2, of: "Ada"), #"{"fields":{"n":1},"id":"Ada.sync-conflict-x","of":"Ada","position":"a0","rev":1}"#)
        // Reals and dates are not in the canonical scanner's subset: those decode (above); the
        // common record (strings, integers) is kept as text.
        let kept = try ServerLine.parse(Array(#"* CHANGE c 9 Ada 2 a0 {"n":[1,{"k":true}],"name":"Ada"}"#.utf8), keepingPayloadText: true)
        XCTAssertNil(kept.payload, "kept as text, not decoded")
        XCTAssertEqual(kept.payloadText, #"{"n":[1,{"k":true}],"name":"Ada"}"#)
        XCTAssertEqual(kept.fields?["name"], .string("Ada"))
    }
}
