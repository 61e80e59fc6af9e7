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

/// Kept versions and conflict copies made within one second (issue 9 item 1).
final class UniqueKeptFilesTests: XCTestCase {
    func testVersionsAndConflictCopiesOfOneSecondAllSurvive() throws {
        let root = NSTemporaryDirectory() + "plistsync-mirror-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        let now = Date(timeIntervalSince1970: 1_700_000_000.25)
        let mirror = MirrorFolder(root: root, now: { now })
        try mirror.ensureFolder(mirror.folder("c"))
        var copies: Set<String> = []
        for edit in 0..<3 {
            try mirror.writeAtomically(Array("v\(edit)".utf8), to: mirror.recordPath("c", "r"))
            mirror.keepVersion("c", "r")
            copies.insert(try mirror.writeConflictCopy(Array("loser\(edit)".utf8), "c", "r", device: "laptop"))
        }
        let versions = try FileManager.default.contentsOfDirectory(atPath: mirror.stateFolder + "/versions/c")
        XCTAssertEqual(versions.count, 3, "\(versions)")
        XCTAssertEqual(Set(versions.map { String(decoding: FileManager.default.contents(atPath: mirror.stateFolder + "/versions/c/" + $0)!, as: UTF8.self) }),
                       ["v0", "v1", "v2"])
        XCTAssertEqual(copies.count, 3)
        XCTAssertEqual(Set(copies.map { String(decoding: FileManager.default.contents(atPath: $0)!, as: UTF8.self) }), ["loser0", "loser1", "loser2"])
        for copy in copies { XCTAssertNil(MirrorFolder.recordID(forFileName: (copy as NSString).lastPathComponent), copy) }
    }

    func testStaleTempFilesOfAKilledAgentAreRemovedAtStartAndNothingElse() throws {
        let root = NSTemporaryDirectory() + "plistsync-temps-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mirror = MirrorFolder(root: root)
        try mirror.ensureFolder(root + "/c")
        try mirror.ensureFolder(root + "/.plistsync/versions/c")
        let stale = [root + "/c/.Ada.plist.plistsync-0A1B2C3D", root + "/.c.order.plist.plistsync-DEADBEEF",
                     root + "/.plistsync/versions/c/.Ada.20261201-000000.plist.plistsync-12345678"]
        let kept = [root + "/c/Ada.plist", root + "/c/.Ada.tmp", root + "/c/.notes.plistsync-xyz"]
        for path in stale + kept { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data()), path) }
        mirror.removeStaleTempFiles()
        for path in stale { XCTAssertFalse(FileManager.default.fileExists(atPath: path), path) }
        for path in kept { XCTAssertTrue(FileManager.default.fileExists(atPath: path), path) }
    }
}

/// A remote change written over a record file must never replace a save made after the write
/// was decided, even one that lands between the last look at the file and the rename (a busy
/// machine can pause the agent there for milliseconds: the chaos test lost typed values so).
final class GuardedWriteRaceTests: XCTestCase {
    private var mirror: MirrorFolder!
    private var path: String!

    override func setUpWithError() throws {
        let root = NSTemporaryDirectory() + "plistsync-mirror-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        mirror = MirrorFolder(root: root)
        try mirror.ensureFolder(mirror.folder("c"))
        path = mirror.recordPath("c", "r")
    }

    private func contents() -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    private func run(inBatch: Bool) throws {
        try mirror.writeAtomically(Array("synced".utf8), to: path)
        var superseded = false
        // The user's editor saves (temp file + rename) right after the agent's last look.
        mirror.beforeGuardedReplace = { [path] in
            _ = FileManager.default.createFile(atPath: path! + ".editor", contents: Data("typed by the user".utf8))
            rename(path! + ".editor", path!)
        }
        let writeGuard = MirrorFolder.WriteGuard(expectedHash: mirror.diskHash(path)) { superseded = true }
        if inBatch { mirror.beginWrites() }
        do {
            try mirror.writeAtomically(Array("from the server".utf8), to: path, guard: writeGuard)
        } catch MirrorError.superseded {}
        if inBatch { mirror.endWrites() }
        XCTAssertEqual(contents(), "typed by the user")
        XCTAssertTrue(superseded)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mirror.folder("c")), ["r.plist"], "temp files left behind")
    }

    func testASaveInTheRaceWindowSurvivesADirectWrite() throws {
        try run(inBatch: false)
    }

    func testASaveInTheRaceWindowSurvivesABatchedWrite() throws {
        try run(inBatch: true)
    }

    func testAGuardedWriteOfANewFileDoesNotReplaceOneMadeMeanwhile() throws {
        mirror.beforeGuardedReplace = { [path] in _ = FileManager.default.createFile(atPath: path!, contents: Data("made by the user".utf8)) }
        XCTAssertThrowsError(try mirror.writeAtomically(Array("restored".utf8), to: path, guard: .init(expectedHash: nil)))
        XCTAssertEqual(contents(), "made by the user")
    }

    func testAGuardedWriteWithNoSaveMeanwhileReplacesTheFile() throws {
        try mirror.writeAtomically(Array("synced".utf8), to: path)
        try mirror.writeAtomically(Array("from the server".utf8), to: path, guard: .init(expectedHash: mirror.diskHash(path)))
        XCTAssertEqual(contents(), "from the server")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mirror.folder("c")), ["r.plist"])
    }

    func testARemoteDeleteLeavesASaveMadeInTheRaceWindow() throws {
        try mirror.writeAtomically(Array("synced".utf8), to: path)
        mirror.beforeGuardedReplace = { [path] in
            _ = FileManager.default.createFile(atPath: path! + ".editor", contents: Data("typed by the user".utf8))
            rename(path! + ".editor", path!)
        }
        var superseded = false
        XCTAssertThrowsError(try mirror.remove(path, guard: .init(expectedHash: mirror.diskHash(path)) { superseded = true }))
        XCTAssertEqual(contents(), "typed by the user")
        XCTAssertTrue(superseded)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mirror.folder("c")), ["r.plist"])
    }

    func testARemoteDeleteRemovesTheFileItWasDecidedOn() throws {
        try mirror.writeAtomically(Array("synced".utf8), to: path)
        try mirror.remove(path, guard: .init(expectedHash: mirror.diskHash(path)))
        XCTAssertNil(contents())
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mirror.folder("c")), [])
    }
}
