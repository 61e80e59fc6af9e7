import XCTest
@testable import AgentKit

final class MirrorFolderTests: XCTestCase {
    func testConflictCopyNamesStayWithinTheFileNameLimit() {
        let short = MirrorFolder.conflictCopyName(id: "Ada", stamp: "20261130-010203", device: "laptop")
        XCTAssertEqual(short, "Ada.sync-conflict-20261130-010203-laptop.plist")
        let longID = String(repeating: "é", count: 100)  // 200 bytes, the longest id allowed
        let long = MirrorFolder.conflictCopyName(id: longID, stamp: "20261130-010203", device: String(repeating: "d", count: 300))
        XCTAssertLessThanOrEqual(long.utf8.count, MirrorFolder.maxFileNameBytes)
        XCTAssertTrue(long.hasSuffix(".plist") && long.contains(".sync-conflict-20261130-010203-"))
        XCTAssertNil(MirrorFolder.recordID(forFileName: long), "a conflict copy must never be read as a record")
    }

    func testOnlyRecordFilesAreRecords() {
        XCTAssertEqual(MirrorFolder.recordID(forFileName: "Ada Lovelace.plist"), "Ada Lovelace")
        for name in [".Ada.plist", "Ada.plist~", "Ada.txt", "Ada.sync-conflict-20260101-000000-x.plist", ".Ada.plist.plistsync-1a2b3c4d"] {
            XCTAssertNil(MirrorFolder.recordID(forFileName: name), name)
        }
    }
}
