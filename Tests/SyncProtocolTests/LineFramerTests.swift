import XCTest
@testable import SyncProtocol

final class LineFramerTests: XCTestCase {
    private let stream = Array("a PING\r\nb GET c \"x y\"\n\nc QUIT\n".utf8)
    private let expected = ["a PING", "b GET c \"x y\"", "", "c QUIT"]

    private func lines(feeding chunks: [[UInt8]]) throws -> [String] {
        var framer = LineFramer(maxLineBytes: 64)
        var result: [String] = []
        for chunk in chunks {
            framer.append(chunk)
            while let line = try framer.nextLine() { result.append(String(decoding: line, as: UTF8.self)) }
        }
        return result
    }

    func testAllAtOnce() throws {
        XCTAssertEqual(try lines(feeding: [stream]), expected)
    }

    func testOneByteAtATime() throws {
        XCTAssertEqual(try lines(feeding: stream.map { [$0] }), expected)
    }

    func testSplitAtEveryIndex() throws {
        for index in 0...stream.count {
            XCTAssertEqual(try lines(feeding: [Array(stream[..<index]), Array(stream[index...])]), expected, "split at \(index)")
        }
    }

    func testLineOverLimitIsRefusedBeforeItsEnd() {
        var framer = LineFramer(maxLineBytes: 8)
        framer.append(Array("012345678".utf8))
        XCTAssertThrowsError(try framer.nextLine())
        var exact = LineFramer(maxLineBytes: 8)
        exact.append(Array("01234567\r\n".utf8))
        XCTAssertEqual(try exact.nextLine().map { Array($0) }, Array("01234567".utf8))
    }
}
