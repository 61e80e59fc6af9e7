import Foundation
import PlistFormat
import SyncProtocol
import XCTest
@testable import AgentKit

/// `plistsync conflicts` and `resolve` on a mirror folder's files.
final class MirrorHistoryTests: XCTestCase {
    private var root: String!

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "plistsync-history-" + UUID().uuidString
        addTeardownBlock { [root] in try? FileManager.default.removeItem(atPath: root!) }
    }

    private func write(_ relative: String, _ fields: [String: Value]) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(PlistFile.encode(.dictionary(fields), as: .xml)).write(to: URL(fileURLWithPath: path))
    }

    /// Issue 18 item 6: `resolve --keep theirs` removes every copy of the record, also a copy of
    /// a copy that two machines of one device name made with an older release.
    func testResolveClearsEveryCopyOfTheRecordEvenANestedOne() throws {
        try write("c/m.plist", ["v": .string("server")])
        try write("c/m.sync-conflict-20261201-101010-twin.plist", ["v": .string("mine")])
        try write("c/m.sync-conflict-20261201-101010-twin.sync-conflict-20261201-101010-twin.plist", ["v": .string("twin")])
        try write("c/other.sync-conflict-20261201-101010-twin.plist", ["v": .string("other")])
        let history = MirrorHistory(directory: root)
        XCTAssertEqual(history.conflicts(in: ["c"]).filter { $0.recordID == "m" }.count, 2)
        let removed = try history.resolve("c", "m", keep: .theirs)
        XCTAssertEqual(removed.count, 2)
        let left = try FileManager.default.contentsOfDirectory(atPath: root + "/c").sorted()
        XCTAssertEqual(left, ["m.plist", "other.sync-conflict-20261201-101010-twin.plist"])
    }

    /// Issue 18 item 4: the copies of an attached app file's collection (kept in its shadow
    /// folder) are listed too.
    func testConflictsOfAnAttachedFileAreListed() throws {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try AttachedFiles.attach(AttachedFile(name: "contacts.plist", collection: "contacts", idKey: "name"), directory: root)
        try write(".plistsync/files/contacts/Ada.plist", ["name": .string("Ada")])
        try write(".plistsync/files/contacts/Ada.sync-conflict-20261201-101010-laptop.plist", ["name": .string("Ada"), "phone": .string("1")])
        let copies = MirrorHistory(directory: root).conflicts()
        XCTAssertEqual(copies.map(\.collection), ["contacts"])
        XCTAssertEqual(copies.map(\.recordID), ["Ada"])
        XCTAssertEqual(copies.first?.device, "laptop")
    }
}
