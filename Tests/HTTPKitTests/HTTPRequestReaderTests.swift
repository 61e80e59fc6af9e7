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

    /// An upgrade or CONNECT is answered once, 501, and never served: the request that asks
    /// for it does not come out (it was carried out, then a 501 followed).
    func testAnUpgradeIsRefusedAndNotServed() {
        for request in [
            "GET /chat HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            "POST /api/collections HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\n{}",
            "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n",
        ] {
            let reader = HTTPRequestReader()
            XCTAssertEqual(reader.feed(bytes("GET /before HTTP/1.1\r\n\r\n" + request)).map(\.target), ["/before"], request)
            XCTAssertEqual(reader.error, .upgradeRefused, request)
            XCTAssertEqual(reader.error?.status, 501)
        }
    }

    /// RFC 9112 §5.1: no whitespace between a field name and its colon; a server must refuse
    /// it with 400, since a proxy may read `Transfer-Encoding : chunked` otherwise (smuggling).
    func testWhitespaceBeforeAHeadersColonIsRefused() {
        for name in ["Transfer-Encoding ", "Transfer-Encoding\t", "Content-Length ", "X(bad)"] {
            let reader = HTTPRequestReader()
            let value = name.hasPrefix("Content") ? "3" : "chunked"
            let requests = reader.feed(bytes("POST /a HTTP/1.1\r\n\(name): \(value)\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /b HTTP/1.1\r\n\r\n"))
            XCTAssertEqual(requests, [], name)
            guard case .malformed(let reason)? = reader.error else { return XCTFail("\(name): \(String(describing: reader.error))") }
            XCTAssertTrue(reason.contains("header"), reason)
        }
    }

    /// A chunk announced larger than the body may be is refused when its size line arrives,
    /// not once the bytes have come (they may never come).
    func testAChunkLargerThanTheBodyLimitIsRefusedAtItsSizeLine() {
        let reader = HTTPRequestReader(limits: HTTPLimits(maxBodyBytes: 1 << 20))
        XCTAssertEqual(reader.feed(bytes("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n100000\r\nab")), [])
        XCTAssertEqual(reader.error, .bodyTooLarge)
        XCTAssertEqual(reader.bufferedBytes, 0, "nothing of it is held")
    }

    /// The absolute form (`GET http://host/path`, RFC 9112 §3.2.2) is a target a server must
    /// accept; it reads as its path and query.
    func testAnAbsoluteFormTargetReadsAsItsPath() throws {
        let target = try XCTUnwrap(HTTPTarget("http://127.0.0.1:7421/api/me?x=1"))
        XCTAssertEqual(target.segments, ["api", "me"])
        XCTAssertEqual(target.query, ["x": "1"])
        XCTAssertEqual(HTTPTarget("https://example.org")?.segments, [])
        XCTAssertEqual(HTTPRequest(method: "GET", target: "http://h/api/me?x=1").path, "/api/me")
    }

    func testAnEmptyHeaderValueKeepsItsOwnName() {
        let requests = HTTPRequestReader().feed(bytes("GET / HTTP/1.1\r\nX-Empty:\r\nHost: x\r\n\r\n"))
        XCTAssertEqual(requests.first?.headers, [HTTPHeader("X-Empty", ""), HTTPHeader("Host", "x")])
    }

    /// A connection not logged in lowers the body limit and holds a larger body's head: no byte
    /// of the body is read until it is allowed, then the requests come out as ever, wherever
    /// the reads cut them.
    func testALargeBodyWaitsUnreadAtItsHeadUntilAllowed() {
        let body = String(repeating: "b", count: 100)
        let text = "GET /first HTTP/1.1\r\n\r\nPUT /big HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 100\r\n\r\n\(body)GET /after HTTP/1.1\r\n\r\n"
        for cut in [0, 10, 30, 60, 80, 100, text.utf8.count - 5] {
            let reader = HTTPRequestReader()
            reader.bodyLimit = 16
            reader.holdsLargeBodies = true
            let bytes = Array(text.utf8)
            var requests = reader.feed(Array(bytes[..<cut]))
            requests += reader.feed(Array(bytes[cut...]))
            XCTAssertEqual(requests.map(\.target), ["/first"], "cut at \(cut)")
            XCTAssertEqual(reader.heldHead?.target, "/big")
            XCTAssertEqual(reader.heldHead?.header("Authorization"), "Bearer t")
            XCTAssertEqual(reader.heldHead?.body, [])
            XCTAssertNil(reader.error)
            let rest = reader.takeHeldBody(upTo: 1 << 20)
            XCTAssertEqual(rest.map(\.target), ["/big", "/after"], "cut at \(cut)")
            XCTAssertEqual(rest.first?.body.count, 100)
            XCTAssertNil(reader.heldHead)
        }
    }

    func testAChunkedBodyIsHeldBeforeLoginAndALargeOneRefusedWhenNotHeld() {
        let holding = HTTPRequestReader()
        holding.bodyLimit = 16
        holding.holdsLargeBodies = true
        XCTAssertEqual(holding.feed(bytes("PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")), [])
        XCTAssertEqual(holding.heldHead?.target, "/c")
        XCTAssertEqual(holding.takeHeldBody(upTo: 1 << 20).first?.body, bytes("abc"))

        let small = HTTPRequestReader()
        small.bodyLimit = 16
        small.holdsLargeBodies = true
        XCTAssertEqual(small.feed(bytes("POST /login HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")).first?.body, bytes("hello"), "a small body is read at once")

        let refusing = HTTPRequestReader()
        refusing.bodyLimit = 16
        XCTAssertEqual(refusing.feed(bytes("POST /login HTTP/1.1\r\nContent-Length: 100\r\n\r\n")), [])
        XCTAssertEqual(refusing.error, .bodyTooLarge)

        let stillTooLarge = HTTPRequestReader()
        stillTooLarge.bodyLimit = 16
        stillTooLarge.holdsLargeBodies = true
        _ = stillTooLarge.feed(bytes("PUT /x HTTP/1.1\r\nContent-Length: 100\r\n\r\n"))
        XCTAssertEqual(stillTooLarge.takeHeldBody(upTo: 50), [])
        XCTAssertEqual(stillTooLarge.error, .bodyTooLarge)
    }
}
