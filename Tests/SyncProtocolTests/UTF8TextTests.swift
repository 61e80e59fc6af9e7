import XCTest
@testable import SyncProtocol

final class UTF8TextTests: XCTestCase {
    /// The eight-bytes-a-time ASCII check sees a high bit wherever it is, in the words and in
    /// the tail, and the full check then tells valid UTF-8 from invalid.
    func testAHighByteAnywhereIsFoundAndJudged() {
        for length in 0..<20 {
            let ascii = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            XCTAssertTrue(UTF8Text.isASCII(ascii))
            XCTAssertTrue(UTF8Text.isValid(ascii))
            for position in 0..<length {
                var invalid = ascii
                invalid[position] = 0xFF
                XCTAssertFalse(UTF8Text.isASCII(invalid), "0xFF at \(position) of \(length)")
                XCTAssertFalse(UTF8Text.isValid(invalid), "0xFF at \(position) of \(length)")
            }
            guard length >= 2 else { continue }
            var accented = ascii
            accented.replaceSubrange((length - 2)..<length, with: Array("é".utf8))
            XCTAssertFalse(UTF8Text.isASCII(accented))
            XCTAssertTrue(UTF8Text.isValid(accented))
        }
    }
}
