import HTTPKit
import XCTest

/// Targets taken apart, cookies and bearer tokens found, responses written: no socket.
final class HTTPTargetTests: XCTestCase {
    func testSegmentsArePercentDecodedAndTheQuerySplit() throws {
        let target = try XCTUnwrap(HTTPTarget("/api/collections/inventory/records/desk%20lamp%2Fold?offset=1&limit=2&q=a+b%26c"))
        XCTAssertEqual(target.segments, ["api", "collections", "inventory", "records", "desk lamp/old"])
        XCTAssertEqual(target.query, ["offset": "1", "limit": "2", "q": "a b&c"])
        XCTAssertEqual(HTTPTarget("/")?.segments, [])
        XCTAssertEqual(HTTPTarget("/a//b/")?.segments, ["a", "b"])
        XCTAssertEqual(HTTPTarget("/caf%C3%A9")?.segments, ["café"])
    }

    func testBrokenEscapesAndNonUTF8AreRefused() {
        XCTAssertNil(HTTPTarget("/a%ZZ"))
        XCTAssertNil(HTTPTarget("/a%4"))
        XCTAssertNil(HTTPTarget("/a%FF%FE"))
    }

    func testPercentEncodingRoundTrips() throws {
        for text in ["desk lamp", "a/b?c#d", "café ☕", "100%"] {
            let encoded = HTTPTarget.percentEncoded(text)
            XCTAssertFalse(encoded.contains(" ") || encoded.contains("/"), encoded)
            XCTAssertEqual(HTTPTarget("/" + encoded)?.segments, [text])
        }
    }

    func testCookiesAndBearerTokensAreFound() {
        let request = HTTPRequest(method: "GET", target: "/", headers: [
            HTTPHeader("Cookie", "theme=dark; plistsync_token=pst_abc ; other=1"), HTTPHeader("authorization", "Bearer  pst_xyz"),
        ])
        XCTAssertEqual(request.cookie("plistsync_token"), "pst_abc")
        XCTAssertNil(request.cookie("missing"))
        XCTAssertEqual(request.bearerToken, "pst_xyz")
        XCTAssertNil(HTTPRequest(method: "GET", target: "/", headers: [HTTPHeader("Authorization", "Basic YTpi")]).bearerToken)
    }

    func testResponsesCarryTheirLengthOrChunksAndCloseWhenAsked() {
        let response = HTTPResponse(status: 409, contentType: "application/json", text: "{}")
        XCTAssertEqual(String(decoding: response.encoded(keepAlive: true), as: UTF8.self),
                       "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(HTTPResponse(status: 204).head(keepAlive: false), "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(HTTPResponse(status: 200).head(keepAlive: true, chunked: true), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertEqual(HTTPResponse.chunk("hello, world"), "c\r\nhello, world\r\n")
        XCTAssertEqual(String(decoding: response.encoded(keepAlive: true, headOnly: true), as: UTF8.self).hasSuffix("\r\n\r\n"), true)
    }

    func testHeaderNamesCompareWithoutASCIICase() {
        XCTAssertTrue(HTTPHeader("If-None-Match", "*").hasName("if-none-match"))
        XCTAssertTrue(HTTPHeader("AUTHORIZATION", "x").hasName("Authorization"))
        XCTAssertFalse(HTTPHeader("Authorization2", "x").hasName("Authorization"))
        XCTAssertFalse(HTTPHeader("Author", "x").hasName("Authorization"))
        XCTAssertFalse(HTTPHeader("X-[", "x").hasName("X-{"), "only letters fold")
    }
}
