import Foundation
import XCTest

/// `plistsync bench` end to end on a throwaway server, small enough for the test suite: the
/// figures must be complete (every change delivered to every subscriber, every put answered).
final class BenchTests: XCTestCase {
    private func recordFile() -> String {
        NSTemporaryDirectory() + "plistsync-bench-record-" + UUID().uuidString + ".tsv"
    }

    func testFanoutOverHelperProcessesDeliversEverythingAndRecordsIt() throws {
        let record = recordFile()
        defer { try? FileManager.default.removeItem(atPath: record) }
        let (status, output, errors) = try PlistSyncBinary.run(
            ["bench", "fanout", "--subscribers", "20", "--processes", "3", "--rate", "0", "--messages", "50", "--record", record])
        XCTAssertEqual(status, 0, errors)
        XCTAssertTrue(output.contains("(1000 of 1000 delivered"), output)
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 2, lines.joined(separator: "\n"))
        XCTAssertTrue(lines[0].hasPrefix("fanout s20 blast\tplistsync\t"), String(lines[0]))
        XCTAssertTrue(lines[0].hasSuffix("\tdelivered/s"), String(lines[0]))
        XCTAssertTrue(lines[1].hasPrefix("fanout s20 blast server CPU per op\tplistsync\t") && lines[1].hasSuffix("\tµs"), String(lines[1]))
        XCTAssertTrue(output.contains("server CPU "), output)
    }

    func testPutCountsAcknowledgementsWithoutErrors() throws {
        let (status, output, errors) = try PlistSyncBinary.run(["bench", "put", "--clients", "2", "--window", "4", "--seconds", "1", "--tls"])
        XCTAssertEqual(status, 0, errors)
        XCTAssertTrue(output.hasPrefix("plistsync put clients=2 window=4: "), output)
        XCTAssertTrue(output.contains(", 0 errors)"), output)
    }

    func testAPeerThatCannotDoTheShapeIsAUsageError() throws {
        let (status, _, errors) = try PlistSyncBinary.run(["bench", "put", "--peer", "nats", "--server", "127.0.0.1:1"])
        XCTAssertEqual(status, 64)
        XCTAssertTrue(errors.contains("put needs a durable peer"), errors)
        let (syncthingStatus, _, syncthingErrors) = try PlistSyncBinary.run(["bench", "put", "--peer", "syncthing"])
        XCTAssertEqual(syncthingStatus, 64)
        XCTAssertTrue(syncthingErrors.contains("--peer syncthing works with propagate"), syncthingErrors)
    }
    func testHTTPComparesGetAndPutWithTheLineProtocolWithoutErrors() throws {
        let record = recordFile()
        defer { try? FileManager.default.removeItem(atPath: record) }
        let (status, output, errors) = try PlistSyncBinary.run(["bench", "http", "--clients", "2", "--seconds", "1", "--record", record])
        XCTAssertEqual(status, 0, errors)
        for shape in ["GET c2 line", "GET c2 http", "PUT c2 line", "PUT c2 http"] {
            XCTAssertTrue(output.contains("\(shape): ") && !output.contains("\(shape): 0 requests/s"), output)
        }
        XCTAssertEqual(output.components(separatedBy: "(0 errors)").count - 1, 4, output)
        let names = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t")[0] }
        XCTAssertTrue(names.contains("GET c2 http/line") && names.contains("PUT c2 http/line"), "\(names)")
    }

    func testSSEDeliversEveryChangeToEveryStreamAndMeasuresIdleStreams() throws {
        let (status, output, errors) = try PlistSyncBinary.run(["bench", "sse", "--subscribers", "10", "--messages", "50", "--rate", "0", "--count", "20"])
        XCTAssertEqual(status, 0, errors)
        XCTAssertTrue(output.contains("fanout s10 blast line: ") && output.contains("fanout s10 blast sse: "), output)
        XCTAssertEqual(output.components(separatedBy: "(500 of 500 delivered").count - 1, 2, output)
        XCTAssertTrue(output.contains("idle event streams: 20 open;") && output.contains("one change reached 20 of them"), output)
    }
}
