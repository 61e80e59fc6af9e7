import HTTPKit
import XCTest

/// The request reader without a socket: every way a client may cut, pipeline, chunk or
/// overstep its requests.
final class HTTPRequestReaderTests: XCTestCase {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func testAGetWithHeadersComesOutWhole() {
        let reader = HTTPRequestReader()
        let requests = reader.feed(bytes("GET /api/collections/contacts?limit=10 HTTP/1.1\r\nHost: x\r\nIf-None-Match: *\r\nAccept: a\r\nAccept: b\r\n\r\n"))
        XCTAssertEqual(requests, [HTTPRequest(method: "GET", target: "/api/collections/contacts?limit=10",
                                              headers: [HTTPHeader("Host", "x"), HTTPHeader("If-None-Match", "*"), HTTPHeader("Accept", "a"), HTTPHeader("Accept", "b")])])
        XCTAssertEqual(requests.first?.header("if-none-match"), "*")
        XCTAssertEqual(requests.first?.header("accept"), "a", "the first of a repeated header")
        XCTAssertEqual(requests.first?.path, "/api/collections/contacts")
        XCTAssertNil(reader.error)
    }

    func testPipelinedRequestsComeOutInOrderWhereverTheReadsCutThem() {
        let text = "PUT /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\n\r\nDELETE /c HTTP/1.1\r\nIf-Match: 3\r\n\r\n"
        let reader = HTTPRequestReader()
        var requests: [HTTPRequest] = []
        for byte in bytes(text) { requests += reader.feed([byte]) }
        XCTAssertEqual(requests.map(\.method), ["PUT", "GET", "DELETE"])
        XCTAssertEqual(requests.map(\.target), ["/a", "/b", "/c"])
        XCTAssertEqual(requests[0].body, bytes("hello"))
        XCTAssertEqual(requests[2].header("If-Match"), "3")
        XCTAssertEqual(HTTPRequestReader().feed(bytes(text)), requests, "one read gives the same three")
    }

    func testAChunkedBodyIsJoined() {
        let reader = HTTPRequestReader()
        let requests = reader.feed(bytes("PUT /r HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"))
        XCTAssertEqual(requests.first?.body, bytes("{\"a\":1}"))
        XCTAssertNil(reader.error)
    }

    func testKeepAliveFollowsTheVersionAndTheConnectionHeader() {
        XCTAssertEqual(HTTPRequestReader().feed(bytes("GET / HTTP/1.1\r\n\r\n")).first?.keepAlive, true)
        XCTAssertEqual(HTTPRequestReader().feed(bytes("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")).first?.keepAlive, false)
        XCTAssertEqual(HTTPRequestReader().feed(bytes("GET / HTTP/1.0\r\n\r\n")).first?.keepAlive, false)
        XCTAssertEqual(HTTPRequestReader().feed(bytes("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).first?.keepAlive, true)
    }

    func testNothingIsReadAfterARequestThatClosesTheConnection() {
        let reader = HTTPRequestReader()
        let requests = reader.feed(bytes("GET /1 HTTP/1.1\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\n\r\n"))
        XCTAssertEqual(requests.map(\.target), ["/1"])
        XCTAssertTrue(reader.isClosed)
        XCTAssertNil(reader.error)
        XCTAssertEqual(reader.feed(bytes("GET /3 HTTP/1.1\r\n\r\n")), [])
    }

    func testGarbageIsMalformedAndTheRequestsBeforeItAreServed() {
        let reader = HTTPRequestReader()
        let requests = reader.feed(bytes("GET /ok HTTP/1.1\r\n\r\nHELLO 1 plistsync\r\n"))
        XCTAssertEqual(requests.map(\.target), ["/ok"])
        guard case .malformed(let reason)? = reader.error else { return XCTFail("\(String(describing: reader.error))") }
        XCTAssertFalse(reason.isEmpty)
        XCTAssertEqual(reader.error?.status, 400)
        XCTAssertEqual(reader.feed(bytes("GET / HTTP/1.1\r\n\r\n")), [], "nothing after the error")
    }

    func testHeadersPastTheLimitAreRefused() {
        let reader = HTTPRequestReader(limits: HTTPLimits(maxHeaderBytes: 256))
        XCTAssertEqual(reader.feed(bytes("GET / HTTP/1.1\r\nCookie: " + String(repeating: "x", count: 300) + "\r\n\r\n")), [])
        XCTAssertEqual(reader.error, .headersTooLarge)
        XCTAssertEqual(reader.error?.status, 431)

        let many = HTTPRequestReader(limits: HTTPLimits(maxHeaders: 3))
        _ = many.feed(bytes("GET / HTTP/1.1\r\n" + (1...4).map { "H\($0): v\r\n" }.joined() + "\r\n"))
        XCTAssertEqual(many.error, .headersTooLarge)
        let enough = HTTPRequestReader(limits: HTTPLimits(maxHeaders: 3))
        XCTAssertEqual(enough.feed(bytes("GET / HTTP/1.1\r\n" + (1...3).map { "H\($0): v\r\n" }.joined() + "\r\n")).first?.headers.count, 3)
    }

    func testABodyPastTheLimitIsRefusedAnnouncedOrChunked() {
        let announced = HTTPRequestReader(limits: HTTPLimits(maxBodyBytes: 10))
        XCTAssertEqual(announced.feed(bytes("PUT / HTTP/1.1\r\nContent-Length: 11\r\n\r\n")), [], "refused before the body arrives")
        XCTAssertEqual(announced.error, .bodyTooLarge)
        XCTAssertEqual(announced.error?.status, 413)

        let chunked = HTTPRequestReader(limits: HTTPLimits(maxBodyBytes: 10))
        _ = chunked.feed(bytes("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n"))
        XCTAssertEqual(chunked.error, .bodyTooLarge)

        let exact = HTTPRequestReader(limits: HTTPLimits(maxBodyBytes: 10))
        XCTAssertEqual(exact.feed(bytes("PUT / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789")).first?.body.count, 10)
    }

    func testAnUpgradeIsRefused() {
        let reader = HTTPRequestReader()
        _ = reader.feed(bytes("GET /chat HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"))
        XCTAssertEqual(reader.error, .upgradeRefused)
        XCTAssertEqual(reader.error?.status, 501)
    }

    func testAnEmptyHeaderValueKeepsItsOwnName() {
        let requests = HTTPRequestReader().feed(bytes("GET / HTTP/1.1\r\nX-Empty:\r\nHost: x\r\n\r\n"))
        XCTAssertEqual(requests.first?.headers, [HTTPHeader("X-Empty", ""), HTTPHeader("Host", "x")])
    }
}
