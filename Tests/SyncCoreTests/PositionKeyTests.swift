import XCTest
@testable import SyncCore

final class PositionKeyTests: XCTestCase {
    func testRandomInsertsKeepStrictOrder() throws {
        var generator = SplitMix(seed: 42)
        var keys: [String] = []
        for _ in 0..<1000 {
            let slot = Int(generator.next() % UInt64(keys.count + 1))
            let lower = slot > 0 ? keys[slot - 1] : nil
            let upper = slot < keys.count ? keys[slot] : nil
            let key = try PositionKey.between(lower, upper)
            if let lower { XCTAssertTrue(lower.utf8.lexicographicallyPrecedes(key.utf8), "\(lower) < \(key)") }
            if let upper { XCTAssertTrue(key.utf8.lexicographicallyPrecedes(upper.utf8), "\(key) < \(upper)") }
            XCTAssertTrue(PositionKey.isValid(key), key)
            XCTAssertTrue(key.utf8.allSatisfy { PositionKey.digits.contains($0) })
            keys.insert(key, at: slot)
        }
        XCTAssertEqual(Set(keys).count, 1000)
        XCTAssertEqual(keys, keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    func testAppendsAndPrependsStayShort() throws {
        var last = PositionKey.initial
        var first = PositionKey.initial
        for _ in 0..<10_000 {
            last = try PositionKey.between(last, nil)
            first = try PositionKey.between(nil, first)
        }
        XCTAssertLessThanOrEqual(last.count, 5)
        XCTAssertLessThanOrEqual(first.count, 5)
        XCTAssertTrue(first < PositionKey.initial && PositionKey.initial < last)
    }

    func testRepeatedInsertsBetweenTwoNeighbours() throws {
        let upper = try PositionKey.between("a0", nil)
        var lower = "a0"
        for _ in 0..<200 {
            let key = try PositionKey.between(lower, upper)
            XCTAssertTrue(lower < key && key < upper)
            lower = key
        }
    }

    func testInvalidBoundsAreRefused() {
        XCTAssertThrowsError(try PositionKey.between("a1", "a0"))
        XCTAssertThrowsError(try PositionKey.between("a1", "a1"))
        XCTAssertThrowsError(try PositionKey.between("!", nil))
        XCTAssertThrowsError(try PositionKey.between("a10", nil))
    }
}

/// A small deterministic generator, so a failure reproduces.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
