import Foundation
import XCTest

/// Issue 11, item 4: each login token is a device; a user sees them all and revokes another
/// one's; the agent on the revoked device stops retrying, says why in its status, and logs in
/// again by itself once `plistsync login` has written a new token.
final class DevicesTests: XCTestCase {
    private var server: LiveServer!
    private var scratch: String!

    override func setUpWithError() throws {
        server = try LiveServer.running()
        scratch = NSTemporaryDirectory() + "plistsync-devices-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        server = nil
        try? FileManager.default.removeItem(atPath: scratch)
    }

    private var address: [String] { ["--server", "127.0.0.1:\(server.port)", "--user", "alice"] }

    private func login(_ label: String) throws -> String {
        let file = scratch + "/" + label + ".token"
        let (code, _, error) = PlistSyncCommand.run(["login"] + address + ["--password-stdin", "--label", label, "--token-file", file], input: "pw\n")
        XCTAssertEqual(code, 0, error)
        return file
    }

    private func status(_ agent: LiveAgent) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(agent.statusText().utf8))) as? [String: Any] ?? [:]
    }

    func testAUserListsDevicesRevokesAnotherAndItsAgentWaitsForANewLogin() throws {
        let laptop = try login("laptop")
        let desktop = try login("desktop")
        let agent = LiveAgent(server: server, user: "alice", password: "pw", device: "laptop")
        // `--token-file laptop`: the token it holds, read again when the file changes.
        let token = try String(contentsOfFile: laptop, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try agent.start { configuration in
            configuration.credential = .token(token)
            configuration.credentialFile = laptop
        }
        eventually(10, agent.statusText()) { status(agent)["connected"] as? Bool == true }

        let (code, listed, error) = PlistSyncCommand.run(["devices"] + address + ["--token-file", desktop])
        XCTAssertEqual(code, 0, error)
        let lines = listed.split(separator: "\n").dropFirst()
        XCTAssertEqual(lines.count, 2, listed)
        XCTAssertTrue(lines.contains { $0.contains("laptop") && !$0.contains("never") && !$0.contains("(this)") }, "the agent's login is noted: \(listed)")
        XCTAssertTrue(lines.contains { $0.contains("desktop") && $0.hasSuffix("(this)") }, listed)

        let revoked = PlistSyncCommand.run(["revoke", "laptop"] + address + ["--token-file", desktop])
        XCTAssertEqual(revoked.0, 0, revoked.2)
        eventually(10, agent.statusText()) {
            status(agent)["connected"] as? Bool == false && (status(agent)["last_error"] as? String ?? "").contains("stopped retrying")
        }
        // Stopped means stopped: no login attempts while the token file stays the same.
        let before = server.log().components(separatedBy: "AUTH_FAILED").count
        holds(1.5, server.log()) { server.log().components(separatedBy: "AUTH_FAILED").count == before && agent.isRunning }

        // A new login on that machine: the agent picks the token up without a restart.
        _ = try login("laptop")
        eventually(10, agent.statusText()) { status(agent)["connected"] as? Bool == true && status(agent)["last_error"] == nil }
        let after = PlistSyncCommand.run(["devices"] + address + ["--token-file", desktop]).1
        XCTAssertEqual(after.split(separator: "\n").count, 3, "desktop and the new laptop token: \(after)")
    }

    func testRevokingAnUnknownDeviceSaysSo() throws {
        let desktop = try login("desktop")
        let (code, _, error) = PlistSyncCommand.run(["revoke", "nosuch"] + address + ["--token-file", desktop])
        XCTAssertNotEqual(code, 0)
        XCTAssertTrue(error.contains("no device nosuch"), error)
    }

    /// Issue 18 (README examples exited 64 with "--user is required"): after `plistsync login`,
    /// client commands use that login's account on that server without --user; with logins of
    /// two accounts they say which to choose.
    func testClientCommandsUseTheOneStoredLoginWithoutUser() throws {
        let home = ["HOME": scratch!]
        let server = ["--server", "127.0.0.1:\(self.server.port)"]
        let refused = try PlistSyncBinary.run(["ls"] + server, environment: home)
        XCTAssertEqual(refused.0, 64)
        XCTAssertTrue(refused.2.contains("plistsync login"), refused.2)
        XCTAssertEqual(try PlistSyncBinary.run(["login"] + server + ["--user", "alice", "--password-stdin"], input: "pw\n", environment: home).0, 0)
        XCTAssertEqual(try PlistSyncBinary.run(["create", "notes"] + server, environment: home).0, 0)
        let listed = try PlistSyncBinary.run(["ls", "--json"] + server, environment: home)
        XCTAssertEqual(listed.0, 0, listed.2)
        XCTAssertTrue(listed.1.contains("\"notes\""), listed.1)
        try self.server.addUser("bob", password: "pw2")
        let granted = try PlistSyncBinary.run(["grant", "notes", "bob", "write"] + server, environment: home)
        XCTAssertEqual(granted.1, "bob may now read and write notes\n", "grant says what it did, not a bare GRANT: \(granted.2)")
        XCTAssertEqual(try PlistSyncBinary.run(["login"] + server + ["--user", "bob", "--password-stdin"], input: "pw2\n", environment: home).0, 0)
        let ambiguous = try PlistSyncBinary.run(["ls"] + server, environment: home)
        XCTAssertEqual(ambiguous.0, 64)
        XCTAssertTrue(ambiguous.2.contains("alice, bob"), ambiguous.2)
    }
}
