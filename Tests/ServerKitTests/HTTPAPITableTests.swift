import HTTPKit
import SyncCore
import SyncProtocol
import XCTest

@testable import ServerHTTP
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
        // Logging in, and an invitation's secret: what it invites to, and redeeming it (a login too).
        XCTAssertEqual(routes.filter { !$0.needsLogin }.map(\.pattern), [["login"], ["invitation"], ["join"]], "only logins are open")
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

    /// A record's JSON splices the store's canonical fields in as they are: the same bytes as
    /// encoding the decoded record.
    func testRecordJSONSplicesTheStoresFieldsAsTheyAre() throws {
        let states = [
            (RecordState(id: #"desk "lamp""#, rev: 3, body: .live(position: "a0", fieldsJSON: #"{"$$price":1.0,"created":{"$date":"2024-05-01T09:30:00Z"},"n":[1,2.5,true],"name":"Désk"}"#)), Int64(7)),
            (RecordState(id: "laptop", rev: 4, body: .deleted), 8),
            (RecordState(id: "☕", rev: 1, body: .live(position: "Zz", fieldsJSON: "{}")), 9),
        ]
        let expected = [
            #"{"fields":{"$$price":1.0,"created":{"$date":"2024-05-01T09:30:00Z"},"n":[1,2.5,true],"name":"Désk"},"id":"desk \"lamp\"","position":"a0","rev":3,"seq":7}"#,
            #"{"deleted":true,"id":"laptop","rev":4,"seq":8}"#,
            #"{"fields":{},"id":"☕","position":"Zz","rev":1,"seq":9}"#,
        ]
        for ((state, seq), json) in zip(states, expected) {
            XCTAssertEqual(APIResponse.recordJSON(state, seq: seq), json)
            // Canonical: encoding the decoded object gives the same bytes.
            XCTAssertEqual(ValueJSON.encode(try ValueJSON.decode(Array(json.utf8))), json)
        }
        let copy = RecordState(id: "Ada.sync-conflict-x", rev: 1, body: .live(position: "a0", fieldsJSON: #"{"n":1}"#))
        XCTAssertEqual(APIResponse.recordJSON(copy, of: "Ada"), #"{"fields":{"n":1},"id":"Ada.sync-conflict-x","of":"Ada","position":"a0","rev":1}"#)
    }
}
