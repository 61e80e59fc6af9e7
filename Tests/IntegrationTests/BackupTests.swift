import Foundation
import XCTest

/// Issue 11, items 5–6: `backup` while the server runs, `restore` only while it is stopped,
/// agents reconciling with a restored store without losing what they hold, one server a data
/// folder, and the `user` commands finding the data folder as `serve` does.
final class BackupTests: XCTestCase {
    private var scratch: String!

    override func setUpWithError() throws {
        scratch = NSTemporaryDirectory() + "plistsync-backup-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    private func onServer(_ server: ListeningServer, _ id: String) throws -> String {
        let client = try server.login("alice", "pw")
        try client.send("g GET notes \(id)")
        return try client.line()
    }

    func testABackupTakenWhileServingRestoresAndAgentsSendWhatTheBackupLacks() throws {
        let server = try LiveServer.running()
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "laptop")
        try agent.start()
        for id in ["one", "two"] { try agent.save("notes", id, ["text": .string(id)]) }
        eventually(10, agent.log()) { (try? self.onServer(server, "two"))?.hasPrefix("g OK GET notes two 1") == true }

        let backup = scratch + "/store.backup"
        let (code, _, error) = PlistSyncCommand.run(["backup", backup, "--data", server.dataPath])
        XCTAssertEqual(code, 0, error)
        let refused = PlistSyncCommand.run(["restore", backup, "--data", server.dataPath])
        XCTAssertNotEqual(refused.0, 0)
        XCTAssertTrue(refused.2.contains("stop it first"), refused.2)

        // Written after the backup: the restored store lacks it, the agent still has it.
        try agent.save("notes", "three", ["text": .string("three")])
        eventually(10, agent.log()) { (try? self.onServer(server, "three"))?.hasPrefix("g OK GET notes three 1") == true }
        server.stop()
        let restored = PlistSyncCommand.run(["restore", backup, "--data", server.dataPath])
        XCTAssertEqual(restored.0, 0, restored.2)
        try server.start()
        eventually(15, agent.log()) { (try? self.onServer(server, "three"))?.contains("\"text\":\"three\"") == true }
        XCTAssertTrue(try onServer(server, "one").contains("\"text\":\"one\""))
        XCTAssertTrue(agent.log().contains("reconciling every collection afresh"), agent.log())
        for id in ["one", "two", "three"] { XCTAssertTrue(FileManager.default.fileExists(atPath: agent.path("notes", id)), id) }
    }

    /// Issue 18 item 8: a server restored from a backup older than some edits is brought
    /// forward by the mirrors: what they synced after the backup (an edit, a delete, a new
    /// record, a new collection) goes back up as edits, with no conflict copies; before, the
    /// backup's values won and the newer ones survived only as conflict copies.
    func testARestoreFromAnOlderBackupIsBroughtForwardByTheMirrors() throws {
        let server = try LiveServer.running()
        let a = LiveAgent(server: server, user: "alice", password: "pw", device: "laptop")
        let b = LiveAgent(server: server, user: "alice", password: "pw", device: "desktop")
        try a.start()
        try b.start()
        for id in ["one", "two"] { try a.save("notes", id, ["text": .string(id)]) }
        eventually(10, b.log()) { b.fields("notes", "two") != nil }
        let backup = scratch + "/store.backup"
        XCTAssertEqual(PlistSyncCommand.run(["backup", backup, "--data", server.dataPath]).0, 0)

        try a.save("notes", "one", ["text": .string("newer")])
        try FileManager.default.removeItem(atPath: a.path("notes", "two"))
        try a.save("notes", "three", ["text": .string("three")])
        try a.save("later", "l1", ["text": .string("made after the backup")])
        eventually(10, b.log()) {
            b.fields("notes", "one")?["text"] == .string("newer") && b.fields("notes", "two") == nil && b.fields("notes", "three") != nil
                && b.fields("later", "l1") != nil
        }
        eventually(10, a.statusText()) { a.statusText().contains("\"pending\":0") }
        server.stop()
        XCTAssertEqual(PlistSyncCommand.run(["restore", backup, "--data", server.dataPath]).0, 0)
        try server.start()

        func serverHas() -> Bool {
            guard let one = try? onServer(server, "one"), let two = try? onServer(server, "two"), let three = try? onServer(server, "three"),
                let later = try? server.login("alice", "pw")
            else { return false }
            guard (try? later.send("l GET later l1")) != nil, let l1 = try? later.line() else { return false }
            return one.contains("\"text\":\"newer\"") && two.hasSuffix("DELETED") && three.contains("\"text\":\"three\"")
                && l1.contains("made after the backup")
        }
        eventually(15, "\(a.log())\n\(b.log())") { serverHas() }
        for agent in [a, b] {
            eventually(10, agent.log()) {
                agent.fields("notes", "one")?["text"] == .string("newer") && agent.fields("notes", "two") == nil && agent.fields("notes", "three") != nil
            }
            XCTAssertEqual(agent.conflictCopies("notes"), [], agent.log())
            XCTAssertFalse(FileManager.default.fileExists(atPath: agent.directory + "/.plistsync/dropped"), "nothing was archived: \(agent.log())")
        }
    }

    func testARestoreRefusesAFileThatIsNotAStore() throws {
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: scratch + "/junk"))
        let (code, _, error) = PlistSyncCommand.run(["restore", scratch + "/junk", "--data", scratch + "/data"])
        XCTAssertNotEqual(code, 0)
        XCTAssertTrue(error.contains("cannot restore"), error)
    }

    func testASecondServerOnOneDataFolderIsRefused() throws {
        let server = try TestServer.running()
        let second = try TestServer(dataPath: server.dataPath)
        XCTAssertThrowsError(try second.start()) { XCTAssertTrue("\($0)".contains("another plistsync server is using"), "\($0)") }
    }

    func testUserCommandsFindTheDataFolderAsServeDoesAndNeverMakeASecondStore() throws {
        let elsewhere = scratch + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let (code, _, error) = try PlistSyncBinary.run(["user", "add", "bob", "--password-stdin"], input: "pw\n", in: elsewhere)
        XCTAssertNotEqual(code, 0)
        XCTAssertTrue(error.contains("no data folder at ./plistsync-data"), error)
        XCTAssertFalse(FileManager.default.fileExists(atPath: elsewhere + "/plistsync-data"))
        // The config file `serve` reads names the folder for the user commands too.
        let data = scratch + "/data"
        try "data = \(data)\nidle-timeout = 60\n".write(toFile: scratch + "/server.conf", atomically: true, encoding: .utf8)
        let added = try PlistSyncBinary.run(["user", "add", "bob", "--password-stdin", "--iterations", "1000"], input: "pw\n",
                                            environment: ["PLISTSYNC_CONFIG": scratch + "/server.conf"], in: elsewhere)
        XCTAssertEqual(added.0, 0, added.2)
        let server = try TestServer(extraArguments: ["--config", scratch + "/server.conf"], dataPath: data)
        try server.start()
        _ = try server.login("bob", "pw")
    }
}
