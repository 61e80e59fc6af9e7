import XCTest

@testable import LoadGenerator

/// The pieces the benchmark's figures rest on: percentiles, merged histograms from helper
/// processes, and reply/payload counting in byte streams cut at arbitrary points.
final class MeasurementTests: XCTestCase {
    func testSmallRunsReportExactPercentiles() {
        var histogram = LatencyHistogram()
        for milliseconds in 1...30 { histogram.add(UInt64(milliseconds) * 1_000_000 + 123) }
        XCTAssertEqual(histogram.percentile(50), 16.000123, accuracy: 1e-9)
        XCTAssertEqual(histogram.percentile(90), 28.000123, accuracy: 1e-9)
        XCTAssertEqual(histogram.summary.maxMilliseconds, 30.000123, accuracy: 1e-9)
    }

    func testLargeRunsStayWithinOnePercentAndMergeLikeOneRun() throws {
        var whole = LatencyHistogram()
        var first = LatencyHistogram()
        var second = LatencyHistogram()
        for step in 0..<300_000 {
            let value = UInt64(step) * 997 % 50_000_000 + 1_000
            whole.add(value)
            if step % 2 == 0 { first.add(value) } else { second.add(value) }
        }
        let exact = (0..<300_000).map { UInt64($0) * 997 % 50_000_000 + 1_000 }.sorted()
        for p in [50.0, 90.0, 99.0] {
            let truth = Double(exact[Int(p / 100 * 300_000)]) / 1e6
            XCTAssertEqual(whole.percentile(p), truth, accuracy: truth * 0.01, "p\(p)")
        }
        // A helper process's histogram travels as text and merges with the parent's.
        var merged = try XCTUnwrap(LatencyHistogram(encoded: Substring(first.encoded)))
        merged.merge(try XCTUnwrap(LatencyHistogram(encoded: Substring(second.encoded))))
        XCTAssertEqual(merged.count, whole.count)
        for p in [50.0, 99.0] { XCTAssertEqual(merged.percentile(p), whole.percentile(p), "p\(p)") }
        XCTAssertEqual(merged.summary.maxMilliseconds, whole.summary.maxMilliseconds)
    }

    func testMarkersAreCountedAcrossChunkBoundaries() {
        var counter = ReplyCounter(marker: Array("HTTP/1.1 ".utf8))
        let stream = Array(String(repeating: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", count: 50).utf8)
        var total = 0
        var start = 0
        for size in [1, 3, 7, 9, 20].cycled(upTo: stream.count) where start < stream.count {
            let end = min(stream.count, start + size)
            total += counter.count(Array(stream[start..<end]))
            start = end
        }
        XCTAssertEqual(total, 50)
    }

    /// Every timestamp is found once whatever the chunks (a marker or its digits cut), and keys
    /// that only end like the marker are not taken for it.
    func testTimestampsAreFoundAcrossChunksAndDecoysAreNot() {
        let line = #"* CHANGE c 7 r1 1 a0 {"at":99,"t":1234567,"x":"t\":5"}"# + "\n"
        let stream = Array(String(repeating: line, count: 40).utf8)
        for sizes in [[1], [2, 5], [3, 7, 9, 20], [4096]] {
            var scanner = TimestampScanner()
            var stamps: [UInt64] = []
            var start = 0
            for size in sizes.cycled(upTo: stream.count) where start < stream.count {
                let end = min(stream.count, start + size)
                scanner.scan(Array(stream[start..<end])) { stamps.append($0) }
                start = end
            }
            XCTAssertEqual(stamps, Array(repeating: 1234567, count: 40), "chunks of \(sizes)")
        }
    }

    func testEtcdWatchValuesAreDecodedAcrossChunks() {
        let payload = #"{"pad":"xx","t":12345}"#
        let event = #"{"result":{"events":[{"kv":{"key":"YQ==","value":""# + Data(payload.utf8).base64EncodedString() + #""}}]}}"#
        let stream = Array((event + "\r\n" + event).utf8)
        var extractor = Base64ValueExtractor()
        var decoded: [UInt8] = []
        for start in stride(from: 0, to: stream.count, by: 11) {
            decoded += extractor.decode(Array(stream[start..<min(stream.count, start + 11)]))
        }
        var stamps: [UInt64] = []
        var scanner = TimestampScanner()
        scanner.scan(decoded + Array(" ".utf8)) { stamps.append($0) }
        XCTAssertEqual(stamps, [12345, 12345])
    }
}

extension Array {
    /// The elements repeated until there are at least `count` of them.
    fileprivate func cycled(upTo count: Int) -> [Element] {
        var out: [Element] = []
        while out.count < count { out += self }
        return out
    }
}
