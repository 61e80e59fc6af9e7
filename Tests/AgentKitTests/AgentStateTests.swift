import Foundation
import XCTest
@testable import AgentKit
import AgentDecisions
import SyncCore

/// Issue 18: state writes that fail (a full disk) are reported, not dropped by `try?`, and the
/// whole state is written again once there is room, so a restart finds what memory had.
final class AgentStateTests: XCTestCase {
    private var mountPoint: String!

    override func setUpWithError() throws {
        mountPoint = NSTemporaryDirectory() + "plistsync-state-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]) == 0 else {
            throw XCTSkip("cannot mount a small tmpfs here (needs root)")
        }
    }

    override func tearDown() {
        _ = run("/bin/umount", [mountPoint])
        try? FileManager.default.removeItem(atPath: mountPoint)
    }

    private func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    private func entry(_ rev: Int64) -> AgentState.Entry {
        SyncedRecord(rev: rev, position: "a0", fieldsJSON: "{\"v\":\"\(String(repeating: "x", count: 500))\"}", fileHash: "h\(rev)", format: .xml)
    }

    /// (A 4 MiB tmpfs: once the filler is gone, the whole state is written again in the WAL.)
    func testAWriteThatFailsOnAFullDiskIsWrittenAgainOnceThereIsRoom() throws {
        let path = mountPoint + "/state.sqlite"
        let state = try AgentState(path: path)
        try state.set(entry(1), "c", "first")
        // Fill the disk.
        let filler = mountPoint + "/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: filler))
        while (try? handle.write(contentsOf: Data(count: 16_384))) != nil {}
        try? handle.close()

        var failed = false
        state.beginBatch()
        for index in 0..<200 {
            do { try state.set(entry(Int64(index + 2)), "c", RecordID("r\(index)")) } catch { failed = true }
        }
        do { try state.endBatch() } catch { failed = true }
        XCTAssertTrue(failed, "a full disk fails a write")
        XCTAssertTrue(state.isBehind)
        XCTAssertEqual(state.records["c"]?.count, 201, "memory keeps every change")

        try FileManager.default.removeItem(atPath: filler)
        XCTAssertNoThrow(try state.catchUp(), "with room again, the state is written again")
        XCTAssertFalse(state.isBehind)
        let reopened = try AgentState(path: path)
        XCTAssertEqual(reopened.records["c"]?.count, 201, "the file has what memory had")
        XCTAssertEqual(reopened.entry("c", "r199"), entry(201))
    }
}
