import Foundation
import XCTest

/// Issue 11, item 5: a collection renamed or deleted by its admin; every agent's folder follows
/// (renamed in place; a dropped one moved to `.plistsync/dropped/`, nothing typed is lost).
final class DropRenameTests: TwoAgentTestCase {
    private var client: [String] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        client = ["--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", a.directory + ".password"]
    }

    private func text(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path),
            let fields = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        else { return nil }
        return fields["text"] as? String
    }

    func testARenamedCollectionsFoldersFollowAndADroppedOneIsArchived() throws {
        try a.start()
        try b.start()
        try a.save("notes", "n1", ["text": .string("first")])
        eventually(10, b.log()) { text(b.path("notes", "n1")) == "first" }

        let renamed = PlistSyncCommand.run(["rename", "notes", "memos"] + client)
        XCTAssertEqual(renamed.0, 0, renamed.2)
        XCTAssertEqual(renamed.1, "renamed notes to memos\n")
        for agent in [a!, b!] {
            eventually(10, agent.log()) { text(agent.path("memos", "n1")) == "first" && !FileManager.default.fileExists(atPath: agent.directory + "/notes") }
        }
        // Edits go on under the new name, both ways.
        try b.save("memos", "n1", ["text": .string("second")])
        eventually(10, a.log()) { text(a.path("memos", "n1")) == "second" }
        try a.save("memos", "n2", ["text": .string("new")])
        eventually(10, b.log()) { text(b.path("memos", "n2")) == "new" }

        let refused = PlistSyncCommand.run(["drop", "memos"] + client)
        XCTAssertEqual(refused.0, 64, "drop wants --yes")
        let dropped = PlistSyncCommand.run(["drop", "memos", "--yes"] + client)
        XCTAssertEqual(dropped.0, 0, dropped.2)
        for agent in [a!, b!] {
            eventually(10, agent.log()) { !FileManager.default.fileExists(atPath: agent.directory + "/memos") }
            let archive = agent.directory + "/.plistsync/dropped"
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: archive)) ?? []
            XCTAssertEqual(folders.count, 1, "\(folders)")
            XCTAssertTrue(folders.first?.hasPrefix("memos-") == true, "\(folders)")
            XCTAssertEqual(text(archive + "/" + (folders.first ?? "") + "/n1.plist"), "second")
            eventually(5, agent.statusText()) { agent.statusText().contains("deleted on the server") }
        }
        // The name is free again: a new folder of that name is a new collection.
        try a.save("memos", "fresh", ["text": .string("again")])
        eventually(10, b.log()) { text(b.path("memos", "fresh")) == "again" }
    }

    /// The folder's archive in `.plistsync/dropped/` (one whose name starts `name-`), if any.
    private func archived(_ agent: MirrorView, _ name: String) -> String? {
        let archive = agent.directory + "/.plistsync/dropped"
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: archive)) ?? []
        return folders.first { $0.hasPrefix(name + "-") }.map { archive + "/" + $0 }
    }

    private func serverCollections() throws -> String {
        PlistSyncCommand.run(["ls", "--json"] + client).1
    }

    /// Issue 18 item 10: a drop made while an agent was stopped is not undone when it starts
    /// (it made the collection again from its folder, with every record).
    func testADropMadeWhileTheAgentWasStoppedIsNotUndone() throws {
        try a.start()
        try a.save("keep", "k1", ["text": .string("typed")])
        eventually(10, a.log()) { (try? serverCollections().contains("\"keep\"")) == true }
        eventually(10, a.log()) { a.statusText().contains("\"keep\"") && a.statusText().contains("\"pending\":0") }
        a.stop()
        XCTAssertEqual(PlistSyncCommand.run(["drop", "keep", "--yes"] + client).0, 0)
        try a.start()
        eventually(10, a.log()) { archived(a, "keep") != nil && !FileManager.default.fileExists(atPath: a.directory + "/keep") }
        XCTAssertEqual(text((archived(a, "keep") ?? "") + "/k1.plist"), "typed", "what was typed stays on disk")
        eventually(5, a.statusText()) { a.statusText().contains("while this agent was away") }
        let listed = try serverCollections()
        XCTAssertFalse(listed.contains("\"keep\""), listed)
        XCTAssertEqual(a.log().components(separatedBy: "created collection keep").count - 1, 1, "made once, at the start: \(a.log())")
    }

    /// Issue 18 item 10: a drop right after a rename (the agent reconnects after every rename).
    func testADropRightAfterARenameIsNotUndone() throws {
        try a.start()
        try a.save("keep", "k1", ["text": .string("typed")])
        eventually(10, a.log()) { a.statusText().contains("\"keep\"") && a.statusText().contains("\"pending\":0") }
        XCTAssertEqual(PlistSyncCommand.run(["rename", "keep", "kept"] + client).0, 0)
        XCTAssertEqual(PlistSyncCommand.run(["drop", "kept", "--yes"] + client).0, 0)
        eventually(10, a.log()) { archived(a, "kept") != nil && !FileManager.default.fileExists(atPath: a.directory + "/kept") }
        eventually(5, a.statusText()) { a.statusText().contains("deleted on the server") }
        let listed = try serverCollections()
        XCTAssertFalse(listed.contains("\"kept\""), listed)
        XCTAssertFalse(listed.contains("\"keep\""), listed)
    }
}
