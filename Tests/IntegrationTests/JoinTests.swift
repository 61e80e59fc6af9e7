import Foundation
import XCTest

/// Issue 45, item 3: one command from an invitation's link to a mirrored folder, over TLS
/// pinned to the fingerprint the link carries; a man in the middle is refused before anything
/// is sent; `plistsync passwd` changes a password from a client machine.
final class JoinTests: XCTestCase {
    private var server: TestServer!
    private var scratch: String!

    override func setUpWithError() throws {
        server = try TestServer(extraArguments: ["--tls", "--http-listen", "127.0.0.1:0", "--invitations-make-accounts"])
        try server.addUser("root", password: "rootpw", admin: true)
        try server.addUser("bob", password: "bobpw")
        try server.start()
        scratch = NSTemporaryDirectory() + "plistsync-join-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        try "rootpw\n".write(toFile: scratch + "/rootpw", atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        server = nil
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// The fingerprint the server printed, as the link carries it (lowercase hex).
    private func fingerprint() throws -> String {
        let line = try XCTUnwrap(server.log().split(separator: "\n").first { $0.contains("fingerprint") })
        return String(try XCTUnwrap(line.split(separator: " ").last)).replacingOccurrences(of: ":", with: "").lowercased()
    }

    /// An invitation's link, as the console shows it (made over HTTPS by a collection admin).
    private func invitationLink(to collection: String, role: String) throws -> String {
        let url = "https://127.0.0.1:\(server.httpPort)"
        let (_, login, _) = try PlistSyncBinary.runTool(
            "/usr/bin/curl", ["-sk", url + "/api/login", "-H", "Content-Type: application/json", "-d", #"{"user":"root","password":"rootpw"}"#])
        let token = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(login.utf8)) as? [String: Any])?["token"] as? String, login)
        let (_, made, _) = try PlistSyncBinary.runTool("/usr/bin/curl", [
            "-sk", url + "/api/collections/\(collection)/invitations", "-H", "Authorization: Bearer \(token)",
            "-H", "Content-Type: application/json", "-d", #"{"role":"\#(role)"}"#,
        ])
        return try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any])?["link"] as? String, made)
    }

    /// Seeds `collection` with `count` records through `plistsync import` (over TLS, pinned).
    private func seed(_ collection: String, count: Int) throws {
        let items = (0..<count).map { "<dict><key>name</key><string>person \($0)</string><key>n</key><integer>\($0)</integer></dict>" }
        let plist = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><array>"# + items.joined() + "</array></plist>"
        try plist.write(toFile: scratch + "/list.plist", atomically: true, encoding: .utf8)
        let imported = try PlistSyncBinary.run([
            "import", scratch + "/list.plist", "--collection", collection, "--server", "127.0.0.1:\(server.port)", "--user", "root",
            "--password-file", scratch + "/rootpw", "--fingerprint", try fingerprint(),
        ])
        XCTAssertEqual(imported.0, 0, imported.2)
    }

    private func files(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".plist") }
    }

    func testALinkJoinsAsANewAccountAndMirrorsTheCollectionOverThePinnedCertificate() throws {
        try seed("team", count: 1000)
        let link = try invitationLink(to: "team", role: "write")
        XCTAssertTrue(link.hasPrefix("https://127.0.0.1:\(server.httpPort)/join#s=psi_"), link)
        XCTAssertTrue(link.hasSuffix("&p=\(server.port)&f=\(try fingerprint())"), link)
        let home = scratch + "/home"
        let folder = scratch + "/Sync"
        let join = Process()
        join.executableURL = PlistSyncBinary.url
        join.arguments = ["join", link, "--dir", folder, "--user", "carol", "--password-stdin", "--device", "laptop"]
        join.environment = ProcessInfo.processInfo.environment.merging(["HOME": home]) { $1 }
        let input = Pipe()
        let output = scratch + "/join.log"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        join.standardInput = input
        join.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        join.standardError = join.standardOutput
        let started = Date()
        try join.run()
        input.fileHandleForWriting.write(Data("tea party\n".utf8))
        defer { join.terminate() }
        let deadline = Date().addingTimeInterval(60)
        while files(in: folder + "/team").count < 1000, Date() < deadline, join.isRunning { usleep(20_000) }
        let elapsed = Date().timeIntervalSince(started)
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        XCTAssertEqual(files(in: folder + "/team").count, 1000, log)
        print("link to 1,000 records in the folder: \(String(format: "%.2f", elapsed)) s (plistsync join, \(PlistSyncBinary.url.path))")
        XCTAssertTrue(log.contains("invited to team as write by root"), log)
        // The certificate is pinned for later commands, the token kept as `login` keeps it.
        let pinned = try String(contentsOfFile: home + "/.config/plistsync/carol@127.0.0.1_\(server.port).fingerprint", encoding: .utf8)
        XCTAssertEqual(pinned.trimmingCharacters(in: .newlines), try fingerprint())
        let listed = try PlistSyncBinary.run(["ls", "team", "--server", "127.0.0.1:\(server.port)", "--user", "carol"], environment: ["HOME": home])
        XCTAssertEqual(listed.0, 0, listed.2)
        XCTAssertTrue(server.log().contains("action=redeem collection=team role=write"), server.log())
    }

    func testALinkJoinsAnExistingAccountWithItsPassword() throws {
        try seed("team", count: 3)
        // Made on the command line this time: `plistsync invite` prints the same link the console shows.
        let invite = try PlistSyncBinary.run(["invite", "team", "--role", "read", "--note", "for bob", "--server", "127.0.0.1:\(server.port)", "--user", "root",
                                              "--password-file", scratch + "/rootpw", "--fingerprint", try fingerprint()])
        XCTAssertEqual(invite.0, 0, invite.2)
        let link = invite.1.trimmingCharacters(in: .whitespacesAndNewlines)
        let pinned = try fingerprint()
        XCTAssertTrue(link.hasPrefix("https://127.0.0.1:\(server.httpPort)/join#s=psi_") && link.hasSuffix("&p=\(server.port)&f=\(pinned)"), link)
        XCTAssertTrue(invite.2.hasPrefix("read access to team, once, until "), invite.2)
        let listed = try PlistSyncBinary.run(["invite", "team", "--list", "--server", "127.0.0.1:\(server.port)", "--user", "root",
                                              "--password-file", scratch + "/rootpw", "--fingerprint", try fingerprint()])
        XCTAssertTrue(listed.1.contains(" read 0 1 ") && listed.1.contains(#" root "for bob""#), listed.1)
        let home = scratch + "/home"
        // `--existing` and a wrong password: refused, nothing kept.
        let wrong = try PlistSyncBinary.run(["join", link, "--dir", scratch + "/Sync", "--user", "bob", "--password-stdin", "--existing"],
                                            input: "guess\n", environment: ["HOME": home])
        XCTAssertNotEqual(wrong.0, 0)
        XCTAssertTrue(wrong.2.contains("AUTH_FAILED"), wrong.2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home + "/.config/plistsync/bob@127.0.0.1_\(server.port).token"))
        // Without --existing the link would make an account; the name is bob's, and his password decides.
        let joined = Process()
        joined.executableURL = PlistSyncBinary.url
        joined.arguments = ["join", link, "--dir", scratch + "/Sync", "--user", "bob", "--password-stdin"]
        joined.environment = ProcessInfo.processInfo.environment.merging(["HOME": home]) { $1 }
        let input = Pipe()
        joined.standardInput = input
        joined.standardOutput = FileHandle.nullDevice
        joined.standardError = FileHandle.nullDevice
        try joined.run()
        input.fileHandleForWriting.write(Data("bobpw\n".utf8))
        defer { joined.terminate() }
        let deadline = Date().addingTimeInterval(30)
        while files(in: scratch + "/Sync/team").count < 3, Date() < deadline, joined.isRunning { usleep(20_000) }
        XCTAssertEqual(files(in: scratch + "/Sync/team").count, 3)
    }

    func testAServerShowingAnotherCertificateAtTheLinksAddressIsRefusedBeforeAnythingIsSent() throws {
        // A man in the middle: openssl's own server, with a certificate of its own, where the link points.
        let mitm = scratch + "/mitm"
        try FileManager.default.createDirectory(atPath: mitm, withIntermediateDirectories: true)
        let made = try PlistSyncBinary.runTool("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "2",
            "-keyout", mitm + "/key.pem", "-out", mitm + "/cert.pem",
        ])
        XCTAssertEqual(made.0, 0, made.2)
        let (_, portText, _) = try PlistSyncBinary.runTool("/usr/bin/python3", ["-c", "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"])
        let port = try XCTUnwrap(Int(portText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let heard = mitm + "/heard"
        _ = FileManager.default.createFile(atPath: heard, contents: nil)
        let impostor = Process()
        impostor.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        impostor.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", mitm + "/cert.pem", "-key", mitm + "/key.pem", "-quiet"]
        impostor.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: heard))
        impostor.standardError = impostor.standardOutput
        impostor.standardInput = Pipe()
        try impostor.run()
        defer { impostor.terminate() }
        let listening = Date().addingTimeInterval(5)
        while Date() < listening, (try? PlistSyncBinary.runTool("/usr/bin/python3", ["-c", "import socket;socket.create_connection(('127.0.0.1',\(port)),1)"]).0) != 0 {
            usleep(50_000)
        }
        let secret = "psi_" + String(repeating: "ab", count: 32)
        let forged = "https://127.0.0.1:\(server.httpPort)/join#s=\(secret)&p=\(port)&f=\(try fingerprint())"
        let refused = try PlistSyncBinary.run(["join", forged, "--dir", scratch + "/Sync", "--user", "carol", "--password-stdin"],
                                              input: "tea party\n", environment: ["HOME": scratch + "/home"])
        XCTAssertNotEqual(refused.0, 0)
        XCTAssertTrue(refused.2.contains("is not the expected one"), refused.2)
        impostor.terminate()
        impostor.waitUntilExit()
        let transcript = (try? String(contentsOfFile: heard, encoding: .utf8)) ?? ""
        XCTAssertFalse(transcript.contains("PEEK") || transcript.contains("REDEEM") || transcript.contains(secret) || transcript.contains("tea party"), transcript)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch + "/home/.config/plistsync"), "nothing was kept")
    }

    func testPasswdChangesThePasswordFromAClientMachineAndLogsOutTheOtherDevices() throws {
        let fingerprint = try fingerprint()
        let home = scratch + "/home"
        let address = ["--server", "127.0.0.1:\(server.port)", "--user", "bob"]
        for label in ["laptop", "phone"] {
            let login = try PlistSyncBinary.run(["login"] + address + ["--password-stdin", "--fingerprint", fingerprint, "--label", label,
                                                                        "--token-file", "\(home)/\(label).token"],
                                                input: "bobpw\n", environment: ["HOME": home])
            XCTAssertEqual(login.0, 0, login.2)
        }
        let wrongOld = try PlistSyncBinary.run(["passwd"] + address + ["--token-file", home + "/laptop.token", "--password-stdin"],
                                               input: "guess\nnew pw\n", environment: ["HOME": home])
        XCTAssertNotEqual(wrongOld.0, 0)
        XCTAssertTrue(wrongOld.2.contains("AUTH_FAILED"), wrongOld.2)
        let changed = try PlistSyncBinary.run(["passwd"] + address + ["--token-file", home + "/laptop.token", "--password-stdin"],
                                              input: "bobpw\nnew pw\n", environment: ["HOME": home])
        XCTAssertEqual(changed.0, 0, changed.2)
        XCTAssertTrue(changed.1.contains("your other devices are logged out"), changed.1)
        func whoami(_ extra: [String]) throws -> Int32 {
            try PlistSyncBinary.run(["ls"] + address + extra, environment: ["HOME": home]).0
        }
        XCTAssertEqual(try whoami(["--token-file", home + "/laptop.token"]), 0, "the device it was changed from stays logged in")
        XCTAssertNotEqual(try whoami(["--token-file", home + "/phone.token"]), 0, "the other device is logged out")
        try "bobpw\n".write(toFile: home + "/old", atomically: true, encoding: .utf8)
        try "new pw\n".write(toFile: home + "/new", atomically: true, encoding: .utf8)
        XCTAssertNotEqual(try whoami(["--password-file", home + "/old"]), 0)
        XCTAssertEqual(try whoami(["--password-file", home + "/new"]), 0)
        XCTAssertTrue(server.log().contains("action=passwd user=bob by=bob"), server.log())
    }

    /// `--install`: the settings plistsync-agent@USER.service reads, written beside the unit's
    /// other instances (PLISTSYNC_ETC stands in for /etc/plistsync, and then systemctl is left to the person).
    func testInstallWritesTheAgentUnitsSettings() throws {
        try seed("team", count: 1)
        let link = try invitationLink(to: "team", role: "read")
        let etc = scratch + "/etc"
        let installed = try PlistSyncBinary.run(["join", link, "--dir", scratch + "/Sync", "--user", "erin", "--password-stdin", "--device", "desk", "--install"],
                                                input: "erin-pw\n", environment: ["HOME": scratch + "/home", "PLISTSYNC_ETC": etc, "USER": "erin"])
        XCTAssertEqual(installed.0, 0, installed.2)
        XCTAssertTrue(installed.1.contains("now run: sudo systemctl enable --now plistsync-agent@erin.service"), installed.1)
        let settings = try String(contentsOfFile: etc + "/agent-erin.conf", encoding: .utf8)
        for line in ["PLISTSYNC_SERVER=127.0.0.1:\(server.port)", "PLISTSYNC_USER=erin", "PLISTSYNC_DIR=\(scratch!)/Sync", "PLISTSYNC_DEVICE=desk",
                     "PLISTSYNC_TOKEN_FILE=\(scratch!)/home/.config/plistsync/erin@127.0.0.1_\(server.port).token"] {
            XCTAssertTrue(settings.contains(line + "\n"), "\(line) in\n\(settings)")
        }
        // The unit's agent, as systemd would start it (Deploy/plistsync-agent@.service), mirrors with that token and pin.
        let unit = try String(contentsOfFile: TranscriptTests.folder.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Deploy/plistsync-agent@.service").path, encoding: .utf8)
        for variable in ["PLISTSYNC_SERVER", "PLISTSYNC_USER", "PLISTSYNC_TOKEN_FILE", "PLISTSYNC_DIR", "PLISTSYNC_DEVICE"] {
            XCTAssertTrue(unit.contains("${\(variable)}"), "the unit reads \(variable)")
        }
    }
}
