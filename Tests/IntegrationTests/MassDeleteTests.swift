import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Issue 9, item 2 (second half): deleting more files of one collection at once than
/// `--confirm-deletes-over` allows holds the deletes until `plistsync deletes` confirms or
/// undoes them; the hold survives a restart.
final class MassDeleteTests: XCTestCase {
    private var server: LiveServer!
    private var alice: LineClient!
    private var agent: LiveAgent!

    override func setUpWithError() throws {
        server = try LiveServer.running()
        alice = try server.login("alice", "pw")
        try alice.expect("c CREATE c", equals: "c OK CREATE c")
        agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
    }

    override func tearDown() {
        agent = nil
        alice = nil
        server = nil
    }

    private func seed(_ count: Int) throws {
        var batch = ""
        for index in 0..<count { batch += "p PUT c r\(index) 0 {\"n\":\(index)}\n" }
        try alice.send(bytes: Array(batch.utf8))
        for _ in 0..<count { XCTAssertTrue(try alice.line().hasPrefix("p OK PUT")) }
        eventually { self.files().count == count && self.agent.statusText().contains("\"pending\":0") }
    }

    private func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: agent.directory + "/c")) ?? []).filter { !$0.hasPrefix(".") }
    }

    private func liveCount() throws -> Int {
        try alice.send("l LIST c")
        while true {
            let line = try alice.line()
            if line.hasPrefix("l ") { return Int(line.split(separator: " ")[4]) ?? -1 }
        }
    }

    private func deleteFiles(_ range: Range<Int>) {
        for index in range { unlink(agent.path("c", "r\(index)")) }
    }

    func testAMassDeleteIsHeldUntilConfirmedAndSurvivesARestart() throws {
        try agent.start()
        try seed(150)
        deleteFiles(0..<150)
        holds(1.5, agent.log()) { (try? self.liveCount()) == 150 }
        eventually { self.agent.statusText().contains("150 files deleted at once are held") }
        let (_, status, _) = PlistSyncCommand.run(["status", "--dir", agent.directory])
        XCTAssertTrue(status.contains("plistsync deletes c --confirm"), status)
        agent.stop()
        try agent.start()
        holds(1.5, "a restart must not push the held deletes: \(agent.log())") { (try? self.liveCount()) == 150 }
        let (code, out, error) = PlistSyncCommand.run(["deletes", "c", "--confirm", "--dir", agent.directory])
        XCTAssertEqual(code, 0, error)
        XCTAssertTrue(out.contains("delete the held records of c"), out)
        eventually(10, agent.log()) { (try? self.liveCount()) == 0 }
        eventually { !self.agent.statusText().contains("held") }
    }

    func testUndoBringsTheFilesBackAndSmallDeletesAreNotHeld() throws {
        try agent.start { $0.confirmDeletesOver = 20 }
        try seed(30)
        deleteFiles(0..<30)
        eventually { self.agent.statusText().contains("30 files deleted at once are held") }
        let (code, _, error) = PlistSyncCommand.run(["deletes", "c", "--undo", "--dir", agent.directory])
        XCTAssertEqual(code, 0, error)
        eventually(10, agent.log()) { self.files().count == 30 }
        XCTAssertEqual(agent.fields("c", "r7"), ["n": .integer(7)])
        XCTAssertEqual(try liveCount(), 30)
        deleteFiles(0..<10)
        eventually(10, agent.log()) { (try? self.liveCount()) == 20 }
        let (usage, _, usageError) = PlistSyncCommand.run(["deletes", "c", "--dir", agent.directory])
        XCTAssertEqual(usage, 64)
        XCTAssertTrue(usageError.contains("--confirm or --undo"), usageError)
    }
}
