import Foundation
import XCTest
@testable import HTTPKit

/// The `Date` header's IMF-fixdate, checked against RFC 9110's own example and Foundation.
final class HTTPDateTests: XCTestCase {
    func testKnownDates() {
        XCTAssertEqual(HTTPDate.text(secondsSince1970: 0), "Thu, 01 Jan 1970 00:00:00 GMT")
        XCTAssertEqual(HTTPDate.text(secondsSince1970: 784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT")
        XCTAssertEqual(HTTPDate.text(secondsSince1970: 951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT")
        XCTAssertEqual(HTTPDate.text(secondsSince1970: 4_133_980_799), "Fri, 31 Dec 2100 23:59:59 GMT")
    }

    func testAgreesWithFoundationOverTwoCenturies() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: 0..<7_258_118_400, using: &generator)
            XCTAssertEqual(HTTPDate.text(secondsSince1970: seconds), formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))), "\(seconds)")
        }
    }

    func testTheCacheMakesTheTextAgainOnlyWhenTheSecondChanges() {
        var cache = HTTPDateCache()
        XCTAssertEqual(cache.text(at: 0), "Thu, 01 Jan 1970 00:00:00 GMT")
        XCTAssertEqual(cache.text(at: 0), "Thu, 01 Jan 1970 00:00:00 GMT")
        XCTAssertEqual(cache.text(at: 1), "Thu, 01 Jan 1970 00:00:01 GMT")
    }

    func testTheDateHeaderComesFirst() {
        let response = HTTPResponse(status: 204, headers: [HTTPHeader("Cache-Control", "no-store")])
        XCTAssertEqual(String(decoding: response.encoded(keepAlive: true, date: "Thu, 01 Jan 1970 00:00:00 GMT"), as: UTF8.self),
                       "HTTP/1.1 204 No Content\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nCache-Control: no-store\r\n\r\n")
    }
}
