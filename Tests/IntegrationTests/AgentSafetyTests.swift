import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Agent faults of issue 9 that can be shown with one agent: a second agent on the same folder,
/// links out of the mirror, and names from a rogue server.
final class AgentSafetyTests: XCTestCase {
    func testASecondAgentOnTheSameFolderExitsWithAClearMessage() throws {
        let server = try TestServer.running()
        let first = try TestAgent(server: server, user: "alice", password: "pw", device: "one")
        try first.start()
        eventually { first.statusText().contains("\"pid\":\(first.pid)") }
        let second = try TestAgent(server: server, user: "alice", password: "pw", device: "two")
        let (status, _, err) = PlistSyncCommand.run(
            ["agent", "--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", second.directory + ".password",
             "--dir", first.directory, "--device", "two"])
        XCTAssertEqual(status, 1)
        XCTAssertTrue(err.contains("another plistsync agent is already mirroring"), err)
        XCTAssertTrue(first.isRunning)
        XCTAssertTrue(first.statusText().contains("\"pid\""), first.statusText())
    }

    func testALinkToAFileOutsideTheMirrorIsNeverPushed() throws {
        let server = try LiveServer.running()
        let secret = NSTemporaryDirectory() + "plistsync-secret-" + UUID().uuidString + ".plist"
        try Data(PlistFile.encode(.dictionary(["secret": .string("hunter2")]), as: .xml)).write(to: URL(fileURLWithPath: secret))
        defer { try? FileManager.default.removeItem(atPath: secret) }
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
        try FileManager.default.createDirectory(atPath: agent.directory + "/c", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: agent.path("c", "Evil"), withDestinationPath: secret)
        try agent.save("c", "Good", ["ok": .bool(true)])
        // A linked collection folder is not a collection either.
        try FileManager.default.createSymbolicLink(atPath: agent.directory + "/etc", withDestinationPath: NSTemporaryDirectory())
        try agent.start()
        let alice = try server.login("alice", "pw")
        var listed = ""
        for _ in 0..<100 {
            usleep(100_000)
            try alice.send("l LIST c")
            var lines: [String] = []
            while let line = try alice.readLine(), !line.hasPrefix("l ") { lines.append(line) }
            listed = lines.joined(separator: "\n")
            if listed.contains("Good") { break }
        }
        XCTAssertTrue(listed.contains("Good"), agent.log())
        XCTAssertFalse(listed.contains("Evil"))
        XCTAssertFalse(listed.contains("hunter2"))
        try alice.expect("k COLLECTIONS", equals: "* COLLECTION c admin 1")
        XCTAssertEqual(try alice.line(), "k OK COLLECTIONS 1")
        eventually(10, agent.statusText()) { agent.statusText().contains("symbolic link") }
    }

    /// A 2 MB plist used to make the agent reconnect ~3 times a second (BYE TOO_LARGE, push again).
    func testAFileOverTheServersLimitIsReportedNotSentAndTheAgentStaysConnected() throws {
        let server = try LiveServer.running()
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
        try agent.save("c", "Huge", ["blob": .data(Data(repeating: 7, count: 1_500_000))], format: .binary)
        try agent.save("c", "Small", ["ok": .bool(true)])
        try agent.start()
        let alice = try server.login("alice", "pw")
        var small = ""
        for _ in 0..<100 where !small.hasPrefix("g OK GET") {
            usleep(100_000)
            small = (try? alice.expect("g GET c Small", prefix: "g ")) ?? ""
        }
        XCTAssertTrue(small.hasPrefix("g OK GET c Small 1 "), agent.log())
        // Never sent, and the agent stays on its one connection.
        holds(2, agent.log()) {
            alice.ask("h GET c Huge").hasPrefix("h ERR NOT_FOUND ") && agent.log().components(separatedBy: "connected to").count - 1 == 1
        }
        eventually(10, agent.statusText()) { agent.statusText().contains("too large") }
    }

    func testUnsafeNamesFromARogueServerNeverLeaveTheMirror() throws {
        let rogue = try RogueServer(collections: ["../../rogue-collection-\(getpid())", "c"], changes: [
            "* CHANGE c 1 ../../rogue-record-\(getpid()) 1 a0 {\"x\":1}",
            "* CHANGE c 2 .hidden 1 a0 {\"x\":2}",
            "* CHANGE c 3 good 1 a1 {\"x\":3}",
        ])
        let agent = LiveAgent(port: { rogue.port }, user: "alice", password: "pw", device: "one")
        try agent.start()
        var good: Fields?
        for _ in 0..<100 where good == nil {
            usleep(100_000)
            good = agent.fields("c", "good")
        }
        XCTAssertEqual(good, ["x": .integer(3)], agent.log())
        let parent = (agent.directory as NSString).deletingLastPathComponent
        let grandparent = (parent as NSString).deletingLastPathComponent
        XCTAssertFalse(FileManager.default.fileExists(atPath: parent + "/rogue-record-\(getpid()).plist"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: grandparent + "/rogue-collection-\(getpid())"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: agent.directory + "/c/.hidden.plist"))
        XCTAssertTrue(agent.log().contains("unsafe"), agent.log())
        agent.stop()
    }
}

/// A server that speaks just enough of the protocol to one agent to send it what a tampered or
/// malicious server could: the collections and changes it is given, whatever their names.
final class RogueServer: @unchecked Sendable {
    private let listener: Int32
    let port: Int
    private let collections: [String]
    private let changes: [String]

    init(collections: [String], changes: [String]) throws {
        self.collections = collections
        self.changes = changes
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound, listen(descriptor, 4) == 0 else { throw LineClient.Failure(description: "rogue server cannot listen") }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in serve() }.start()
    }

    deinit { close(listener) }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            Thread { [self] in talk(connection) }.start()
        }
    }

    private func talk(_ connection: Int32) {
        func send(_ text: String) {
            let bytes = Array((text + "\n").utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        forEachLine(of: connection) { line in
            let words = String(decoding: line.dropLast(), as: UTF8.self).split(separator: " ").map(String.init)
            guard words.count >= 2 else { return }
            let tag = words[0]
            switch words[1] {
            case "HELLO": send("\(tag) OK HELLO 1 rogue {\"max_line_bytes\":1048576,\"max_record_bytes\":262144}")
            case "AUTH": send("\(tag) OK AUTH alice")
            case "COLLECTIONS":
                for name in collections { send("* COLLECTION \(name) admin 3") }
                send("\(tag) OK COLLECTIONS \(collections.count)")
            case "SUB" where words.count > 2 && words[2] == "c":
                for change in changes { send(change) }
                send("\(tag) OK SUB c 3")
            case "SUB": send("\(tag) OK SUB \(words[2]) 0")
            case "PING": send("\(tag) OK PONG")
            default: send("\(tag) ERR FORBIDDEN not here")
            }
        }
        close(connection)
    }
}

/// `rm -rf` of a collection folder, or moving it away while the agent is stopped, used to delete
/// every record on the server and in every other mirror (issue 9 item 2).
final class VanishedFolderTests: XCTestCase {
    func testAVanishedCollectionFolderStopsMirroringItAndDeletesNothing() throws {
        let server = try LiveServer.running()
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE c", equals: "c OK CREATE c")
        var batch = ""
        for index in 0..<300 { batch += "p PUT c r\(index) 0 {\"n\":\(index)}\n" }
        try alice.send(bytes: Array(batch.utf8))
        for _ in 0..<300 { XCTAssertTrue(try alice.line().hasPrefix("p OK PUT")) }
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
        try agent.start()
        let folder = agent.directory + "/c"
        func files() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") }.count
        }
        eventually { files() == 300 }
        eventually { agent.statusText().contains("\"pending\":0") }
        func liveCount() -> String {
            guard (try? alice.send("l LIST c")) != nil else { return "" }
            while let line = try? alice.line() {
                if line.hasPrefix("l ") { return line }
            }
            return ""
        }
        try FileManager.default.removeItem(atPath: folder)
        holds(1.5, agent.log()) { liveCount().hasPrefix("l OK LIST c 300 ") }
        eventually(10, agent.statusText()) { agent.statusText().contains("the folder is missing") }
        // Restarted with the folder still gone: still nothing deleted, nothing recreated.
        agent.stop()
        try agent.start()
        holds(1.5, agent.log()) { liveCount().hasPrefix("l OK LIST c 300 ") && !FileManager.default.fileExists(atPath: folder) }
        // Made again (empty): the collection is downloaded afresh, not deleted.
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        eventually { files() == 300 }
        XCTAssertTrue(liveCount().hasPrefix("l OK LIST c 300 "), agent.log())
        // A single deleted file is still a delete.
        try FileManager.default.removeItem(atPath: agent.path("c", "r7"))
        eventually { liveCount().hasPrefix("l OK LIST c 299 ") }
    }
}

/// Walking the README (issue 30): `rm -rf ~/Sync/friends` and the folder made again while the
/// agent ran: it was downloaded again, but saves in it were never pushed (the watch was on the
/// folder that was gone) until a restart or the hourly rescan.
final class RemadeFolderTests: XCTestCase {
    func testSavesInAFolderRemovedAndMadeAgainArePushed() throws {
        let server = try LiveServer.running()
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
        try agent.save("friends", "ada", ["phone": .string("1")])
        try agent.start()
        let alice = try server.login("alice", "pw")
        func get(_ id: String) -> String { (try? alice.expect("g GET friends \(id)", prefix: "g ")) ?? "" }
        eventually { get("ada").hasSuffix("{\"phone\":\"1\"}") }
        let folder = agent.directory + "/friends"
        try FileManager.default.removeItem(atPath: folder)
        eventually(10, agent.statusText()) { agent.statusText().contains("the folder is missing") }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        eventually { agent.fields("friends", "ada") == ["phone": .string("1")] }
        try agent.save("friends", "ada", ["phone": .string("2")])
        eventually(5, agent.log()) { get("ada").hasSuffix("{\"phone\":\"2\"}") }
        try agent.save("friends", "bob", ["phone": .string("3")])
        eventually(5, agent.log()) { get("bob").hasSuffix("{\"phone\":\"3\"}") }
    }
}

/// vim's default save (rename to `X.plist~`, write a new `X.plist`, unlink the backup) used to
/// push DEL + re-create in 7 of 30 saves, moving the record to the end (issue 9 item 6).
final class EditorSaveTests: XCTestCase {
    func testVimStyleSavesAreEditsNeverDeleteAndRecreate() throws {
        let server = try LiveServer.running()
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
        try agent.save("c", "first", ["n": .integer(0)])
        try agent.save("c", "X", ["n": .integer(0)])
        try agent.save("c", "last", ["n": .integer(0)])
        try agent.start()
        let alice = try server.login("alice", "pw")
        func get(_ id: String) throws -> String { try alice.expect("g GET c \(id)", prefix: "g ") }
        eventually { ((try? get("last")) ?? "").hasPrefix("g OK GET c last 1 ") }
        let position = try get("X").split(separator: " ")[6]
        for save in 1...30 {
            let path = agent.path("c", "X")
            XCTAssertEqual(rename(path, path + "~"), 0)
            try Data(PlistFile.encode(.dictionary(["n": .integer(Int64(save))]), as: .xml)).write(to: URL(fileURLWithPath: path))
            unlink(path + "~")
            eventually { ((try? get("X")) ?? "").hasSuffix("{\"n\":\(save)}") }
        }
        let final = try get("X").split(separator: " ")
        XCTAssertEqual(final[6], position, "the record moved: it was deleted and created again")
        XCTAssertEqual(final[5], "31", "one change a save: \(final)")
        XCTAssertFalse(agent.log().contains("DELETED"))
        XCTAssertEqual(try alice.tombstones(in: "c"), 0)
    }
}

/// A change the agent cannot write (a folder where the file goes; a full disk) used to be
/// recorded as applied: the mirror stayed stale and a DEL nobody made followed (issue 9 items 3, 4).
final class FailedApplyTests: XCTestCase {
    func testAChangeThatCannotBeWrittenIsRetriedNeverRecordedAsApplied() throws {
        let server = try LiveServer.running()
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "one")
        try agent.save("c", "r", ["v": .integer(1)])
        try agent.start()
        let alice = try server.login("alice", "pw")
        eventually { ((try? alice.expect("g GET c r", prefix: "g ")) ?? "").hasPrefix("g OK GET c r 1 ") }
        // The file becomes a folder, then the record changes on the server.
        try FileManager.default.removeItem(atPath: agent.path("c", "r"))
        try FileManager.default.createDirectory(atPath: agent.path("c", "r"), withIntermediateDirectories: false)
        try alice.expect("p PUT c r 1 {\"v\":2}", prefix: "p OK PUT c r 2 ")
        try alice.expect("q PUT c other 0 {\"v\":3}", prefix: "q OK PUT c other 1 ")
        eventually { agent.fields("c", "other") == ["v": .integer(3)] }
        // Nothing is deleted on the server, and the agent says what is wrong.
        holds(1, agent.log()) { alice.ask("g2 GET c r").hasPrefix("g2 OK GET c r 2 ") }
        eventually(10, agent.statusText()) { agent.statusText().contains("folder") }
        // The folder goes away: the change that could not be written arrives by itself.
        try FileManager.default.removeItem(atPath: agent.path("c", "r"))
        eventually(15) { agent.fields("c", "r") == ["v": .integer(2)] }
        holds(1, agent.log()) { alice.ask("g3 GET c r").hasPrefix("g3 OK GET c r ") && agent.fields("c", "r") == ["v": .integer(2)] }
        XCTAssertEqual(try alice.tombstones(in: "c"), 0, agent.log())
    }
}

/// Issue 9, item 3: on a full disk the change that cannot be written is reported in
/// status.json (rewritten in place, since no temp file fits) and applied once room returns.
final class AgentFullDiskTests: XCTestCase {
    func testAFullDiskIsReportedInStatusAndTheChangeArrivesWhenRoomReturns() throws {
        let mountPoint = NSTemporaryDirectory() + "plistsync-agent-full-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        defer {
            _ = try? PlistSyncShell.run("umount", [mountPoint])
            try? FileManager.default.removeItem(atPath: mountPoint)
        }
        guard (try? PlistSyncShell.run("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint])) == 0 else {
            throw XCTSkip("cannot mount a small tmpfs here (needs root)")
        }
        let server = try LiveServer.running()
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE c", equals: "c OK CREATE c")
        try alice.expect("p PUT c r 0 {\"v\":1}", prefix: "p OK PUT c r 1 ")
        let agent = LiveAgent(port: { server.port }, user: "alice", password: "pw", device: "one", directory: mountPoint + "/mirror")
        try agent.start()
        eventually { agent.fields("c", "r") == ["v": .integer(1)] }
        eventually { agent.statusText().contains("\"last_sync\"") && agent.statusText().contains("\"pending\":0") }
        // Fill the volume to the last byte.
        let filler = open(mountPoint + "/filler", O_WRONLY | O_CREAT, 0o600)
        let chunk = [UInt8](repeating: 7, count: 4096)
        while chunk.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
        close(filler)
        try alice.expect("p2 PUT c r 1 {\"v\":2}", prefix: "p2 OK PUT c r 2 ")
        eventually(10, agent.statusText() + agent.log()) { agent.statusText().contains("cannot write") }
        XCTAssertTrue(agent.statusText().contains("disk_full_or_unwritable"), agent.statusText())
        XCTAssertEqual(agent.fields("c", "r"), ["v": .integer(1)])
        let (code, out, _) = PlistSyncCommand.run(["status", "--dir", agent.directory])
        XCTAssertEqual(code, 0)
        XCTAssertTrue(out.contains("problem: c/r: cannot write"), out)
        // Room returns: the change is applied by the retry, and the problem clears.
        unlink(mountPoint + "/filler")
        eventually(15, agent.log()) { agent.fields("c", "r") == ["v": .integer(2)] }
        eventually(5, agent.statusText()) { !agent.statusText().contains("cannot write") }
    }
}

/// Issue 9, item 14: what status reported survives a restart, even one while the server is
/// unreachable, until the collection is checked again.
final class StatusAcrossRestartTests: XCTestCase {
    func testProblemsSurviveARestartWhileTheServerIsDownAndClearWhenFixed() throws {
        let server = try TestServer.running()
        let agent = try TestAgent(server: server, user: "alice", password: "pw", device: "one")
        try agent.save("c", "good", ["v": .integer(1)])
        try agent.start()
        eventually { agent.statusText().contains("\"c\":{\"records\":1") }
        try Data("<plist><dict><key>half".utf8).write(to: URL(fileURLWithPath: agent.path("c", "bad")))
        XCTAssertEqual(symlink("/etc/hostname", agent.path("c", "link")), 0)
        eventually(10, agent.statusText()) { agent.statusText().contains("c/bad") && agent.statusText().contains("c/link") }
        agent.stop()
        server.stop(signal: SIGKILL)
        try agent.start()
        eventually(10, agent.statusText()) { agent.statusText().contains("\"pid\":\(agent.pid)") }
        XCTAssertTrue(agent.statusText().contains("c/bad") && agent.statusText().contains("c/link"), agent.statusText())
        let (_, out, _) = PlistSyncCommand.run(["status", "--dir", agent.directory])
        XCTAssertTrue(out.contains("unparseable: c/bad") && out.contains("problem: c/link"), out)
        try server.start()
        holds(1.5, agent.statusText()) { agent.statusText().contains("c/bad") && agent.statusText().contains("c/link") }
        unlink(agent.path("c", "link"))
        try agent.save("c", "bad", ["v": .integer(2)])
        eventually(15, agent.statusText()) { !agent.statusText().contains("c/bad") && !agent.statusText().contains("c/link") }
    }
}
