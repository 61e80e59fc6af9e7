import Foundation
import XCTest

/// Limits that need a server started with non-default settings.
final class LimitsTests: XCTestCase {
    func testSlowSubscriberIsDroppedWithByeSlow() throws {
        let server = try LiveServer.running { $0.limits.maxPendingOutputBytes = 65536 }
        let writer = try server.login("alice", "pw")
        try writer.expect("c CREATE big", equals: "c OK CREATE big")
        let slow = try server.login("alice", "pw")
        try slow.expect("s SUB big SINCE 0", equals: "s OK SUB big 0")
        // The subscriber reads nothing while ~16 MB of changes are committed.
        let value = String(repeating: "v", count: 20_000)
        var batch = ""
        for index in 0..<800 { batch += "p\(index) PUT big r\(index) 0 {\"v\":\"\(value)\"}\n" }
        try writer.send(bytes: Array(batch.utf8))
        for index in 0..<800 { XCTAssertTrue(try writer.line().hasPrefix("p\(index) OK PUT")) }
        var lines: [String] = []
        while let line = try slow.readLine() { lines.append(line) }
        XCTAssertEqual(lines.last, "* BYE SLOW")
        XCTAssertLessThan(lines.count, 801, "the slow subscriber was buffered without bound")
        // What it did get is in seq order with none skipped, so it can resume with SINCE.
        let seqs = lines.dropLast().map { Int($0.split(separator: " ")[3])! }
        XCTAssertEqual(seqs, Array(1..<(seqs.count + 1)))
        let resumed = try server.login("alice", "pw")
        try resumed.send("s SUB big SINCE \(seqs.count)")
        XCTAssertEqual(try resumed.line().split(separator: " ")[3], "\(seqs.count + 1)")
        try writer.expect("p PING", equals: "p OK PONG")
    }

}

/// The `plistsync user` and usage contracts (DESIGN.md §4).
final class CommandLineTests: XCTestCase {
    func testEverySubcommandsHelpListsItsOptionsOneLineEach() throws {
        let subcommands = ["serve", "user", "agent", "login", "logout", "devices", "revoke", "status", "attach", "import", "export",
                           "conflicts", "resolve", "versions", "deletes", "backup", "ls", "get", "put", "rm", "mv", "watch",
                           "create", "grant", "bench", "invite", "join", "passwd"]
        for name in subcommands {
            let (code, help, error) = PlistSyncCommand.run([name, "--help"])
            XCTAssertEqual(code, 0, "\(name): \(error)")
            XCTAssertTrue(help.contains("USAGE: plistsync"), "\(name) --help has a usage line:\n\(help)")
            let options = help.split(separator: "\n").filter { $0.hasPrefix("  --") || $0.hasPrefix("  -h, --") || $0.hasPrefix("  -o, --") }
            XCTAssertFalse(options.isEmpty && name != "status", "\(name) --help lists its options:\n\(help)")
            for line in options {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                XCTAssertGreaterThan(words.count, 1, "\(name): an option without its line of explanation: \(line)")
            }
        }
        let (code, version, _) = PlistSyncCommand.run(["--version"])
        XCTAssertEqual(code, 0)
        XCTAssertTrue(version.hasPrefix("plistsync 0."), version)
    }

    func testUserAdministrationWorksOnTheDataFolder() throws {
        let data = NSTemporaryDirectory() + "plistsync-cli-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        XCTAssertEqual(PlistSyncCommand.run(["user", "add", "carol", "--password-stdin", "--iterations", "1000", "--data", data], input: "pw\n").0, 0)
        let duplicate = PlistSyncCommand.run(["user", "add", "carol", "--password-stdin", "--data", data], input: "pw\n")
        XCTAssertEqual(duplicate.0, 1)
        XCTAssertTrue(duplicate.2.contains("exists"), duplicate.2)
        XCTAssertEqual(PlistSyncCommand.run(["user", "add", "dave", "--admin", "--password-stdin", "--iterations", "1000", "--data", data], input: "pw\n").0, 0)
        XCTAssertEqual(PlistSyncCommand.run(["user", "list", "--data", data]).1, "carol\ndave (admin)\n")
        XCTAssertEqual(PlistSyncCommand.run(["user", "passwd", "carol", "--password-stdin", "--iterations", "1000", "--data", data], input: "new\n").0, 0)
        XCTAssertEqual(PlistSyncCommand.run(["user", "remove", "carol", "--data", data]).0, 0)
        XCTAssertEqual(PlistSyncCommand.run(["user", "remove", "carol", "--data", data]).0, 1)
        XCTAssertEqual(PlistSyncCommand.run(["user", "list", "--data", data]).1, "dave (admin)\n")
        XCTAssertEqual(PlistSyncCommand.run(["user", "add", "bad/name", "--password-stdin", "--data", data], input: "pw\n").0, 64)
        XCTAssertEqual(PlistSyncCommand.run(["user", "add", "erin", "--password-stdin", "--data", data], input: "\n").0, 1)
    }

    func testUsageErrorsExit64WithoutABacktrace() throws {
        for arguments in [["frobnicate"], ["serve", "--listen", "nonsense"], ["serve", "--bogus"], ["user"], ["serve", "--idle-timeout", "-3"]] {
            let (status, _, err) = try PlistSyncBinary.run(arguments)
            XCTAssertEqual(status, 64, "\(arguments)")
            XCTAssertFalse(err.contains("Fatal error") || err.contains("backtrace"), err)
            XCTAssertFalse(err.isEmpty)
        }
        let help = try PlistSyncBinary.run(["serve", "--help"])
        XCTAssertEqual(help.0, 0)
        XCTAssertTrue(help.1.contains("USAGE: plistsync serve"))
    }

    func testAddressInUseIsOneClearLine() throws {
        let server = try TestServer()
        try server.start()
        let (status, _, err) = try PlistSyncBinary.run(["serve", "--listen", "127.0.0.1:\(server.port)", "--data", server.dataPath + "-other"])
        try? FileManager.default.removeItem(atPath: server.dataPath + "-other")
        XCTAssertEqual(status, 1)
        XCTAssertTrue(err.contains("already in use"), err)
    }
}

/// `login`, `logout` and the scripting commands against a live server.
final class ScriptingTests: XCTestCase {
    /// Issue 43 item 7: `--token-file tok` failed with Foundation's "file doesn't exist" (the
    /// folder of a bare name is ""); a relative path resolves against the working directory,
    /// for login, the commands that use the token, and logout. A process: the working
    /// directory is the subject.
    func testATokenFileGivenRelativeToTheWorkingDirectoryWorks() throws {
        let server = try LiveServer.running()
        let folder = server.dataPath + "-cwd"
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let common = ["--server", "127.0.0.1:\(server.port)", "--user", "alice"]
        for relative in ["tok", "sub/tok", "./new/tok"] {
            let login = try PlistSyncBinary.run(["login"] + common + ["--token-file", relative, "--password-stdin"], input: "pw\n", in: folder)
            XCTAssertEqual(login.0, 0, "\(relative): \(login.2)")
            XCTAssertTrue(login.1.contains("token stored in \(folder)/\(relative.replacingOccurrences(of: "./", with: ""))"), login.1)
            XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/" + relative), relative)
            XCTAssertEqual(try PlistSyncBinary.run(["ls"] + common + ["--token-file", relative], in: folder).0, 0, relative)
            XCTAssertEqual(try PlistSyncBinary.run(["logout"] + common + ["--token-file", relative], in: folder).0, 0, relative)
            XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/" + relative), relative)
        }
    }

    func testLoginStoresAPrivateTokenThatScriptsUseUntilLogout() throws {
        let server = try LiveServer.running()
        let tokenFile = server.dataPath + "-token"
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        let common = ["--server", "127.0.0.1:\(server.port)", "--user", "alice"]
        let login = PlistSyncCommand.run(["login"] + common + ["--token-file", tokenFile, "--password-stdin"], input: "pw\n")
        XCTAssertEqual(login.0, 0, login.2)
        let mode = (try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? NSNumber)?.intValue
        XCTAssertEqual(mode, 0o600)
        let withToken = common + ["--token-file", tokenFile]
        XCTAssertEqual(PlistSyncCommand.run(["create", "presidents"] + withToken).1, "created presidents\n")
        let put = PlistSyncCommand.run(["put", "presidents", "1"] + withToken, input: #"{"number":1,"name":"George Washington","from":1789,"to":1797,"party":"None"}"#)
        XCTAssertEqual(put.1, "saved presidents/1: rev 1, seq 1\n", put.2)
        XCTAssertEqual(PlistSyncCommand.run(["put", "presidents", "2", #"{"number":2,"name":"John Adams"}"#, "--json"] + withToken).1,
                       #"{"collection":"presidents","id":"2","rev":1,"seq":2}"# + "\n")
        XCTAssertEqual(PlistSyncCommand.run(["mv", "presidents", "2", "FIRST"] + withToken).1, "moved presidents/2: rev 2, seq 3\n")
        XCTAssertEqual(PlistSyncCommand.run(["get", "presidents", "1", "--json"] + withToken).1,
                       #"{"from":1789,"name":"George Washington","number":1,"party":"None","to":1797}"# + "\n")
        XCTAssertEqual(PlistSyncCommand.run(["get", "presidents", "1"] + withToken).1,
                       "presidents/1  rev 1\n  from    1789\n  name    George Washington\n  number  1\n  party   None\n  to      1797\n")
        XCTAssertEqual(PlistSyncCommand.run(["ls", "presidents"] + withToken).1,
                       "ID  REV  FIELDS\n2   2    name=John Adams number=2\n1   1    from=1789 name=George Washington number=1 party=None to=1797\n")
        let listing = try JSONSerialization.jsonObject(with: Data(PlistSyncCommand.run(["ls", "presidents", "--json"] + withToken).1.utf8)) as? [[String: Any]]
        XCTAssertEqual(listing?.compactMap { $0["id"] as? String }, ["2", "1"])
        let stale = PlistSyncCommand.run(["rm", "presidents", "1", "--rev", "9"] + withToken)
        XCTAssertEqual(stale.0, 1)
        XCTAssertTrue(stale.2.contains("ERR CONFLICT presidents 1 1 "), stale.2)
        XCTAssertEqual(PlistSyncCommand.run(["rm", "presidents", "1"] + withToken).1, "deleted presidents/1: rev 2, seq 4\n")
        XCTAssertEqual(PlistSyncCommand.run(["logout"] + withToken).0, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tokenFile))
        let afterLogout = PlistSyncCommand.run(["ls"] + common + ["--token-file", tokenFile])
        XCTAssertEqual(afterLogout.0, 64)
        let wrong = PlistSyncCommand.run(["login"] + common + ["--token-file", tokenFile, "--password-stdin"], input: "nope\n")
        XCTAssertEqual(wrong.0, 1)
        XCTAssertTrue(wrong.2.contains("AUTH_FAILED"), wrong.2)
    }
}
