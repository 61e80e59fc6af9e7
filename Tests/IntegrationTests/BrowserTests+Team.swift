import Foundation
import XCTest

/// Issue 45 in the browser: an invitation made in the console, its QR code read from a
/// screenshot by zbarimg and opened in a second browser profile at phone width, which makes an
/// account and lands in the collection while the inviter watches; a server admin's Users view;
/// a person's own password. Screenshots go to $PLISTSYNC_SCREENSHOTS (docs/console) when set.
extension BrowserTests {
    /// This test's server again on the same data, letting invitations make accounts, with a
    /// server admin `root`.
    private func serveTeam() throws {
        _ = server.stop()
        let team = try TestServer(extraArguments: ["--http-listen", "127.0.0.1:0", "--invitations-make-accounts"], dataPath: server.dataPath)
        try team.addUser("root", password: "rootpw", admin: true)
        try team.start()
        server = team
        line = try team.login("alice", "pw")
    }

    private func screenshotFolder() throws -> String {
        if let folder = ProcessInfo.processInfo.environment["PLISTSYNC_SCREENSHOTS"] { return folder }
        let folder = NSTemporaryDirectory() + "plistsync-team-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        return folder
    }

    func testAnInvitationsQRCodeJoinsAPhoneAsANewAccountWhileTheInviterWatches() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/zbarimg"), "Deploy/test.sh installs zbar-tools")
        try serveTeam()
        let mirror = NSTemporaryDirectory() + "plistsync-joined-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: mirror) }
        let results = try browse("team-invite", ["contacts", try screenshotFolder(), PlistSyncBinary.url.path, mirror])
        let link = try XCTUnwrap(results["link"])
        XCTAssertTrue(link.hasPrefix("http://127.0.0.1:\(server.httpPort)/join#s=psi_") && link.hasSuffix("&p=\(server.port)"), link)
        XCTAssertEqual(results["qr_matches"], "True", "zbarimg read \(results["qr_decoded"] ?? "nothing") from the screenshot")
        XCTAssertEqual(results["listed"], "0 of 3")
        XCTAssertEqual(results["join_files"], "Ada.plist,Grace.plist,Linus.plist", "plistsync join, given the link zbarimg read, mirrored the collection")
        XCTAssertTrue(results["summary"]?.hasPrefix("alice invites you to contacts, with write access (until ") ?? false, results["summary"] ?? "")
        XCTAssertEqual(results["note"], "for carol")
        XCTAssertEqual(results["new_account_offered"], "True")
        XCTAssertEqual(results["invitee_who"], "carol")
        XCTAssertEqual(results["invitee_collection"], "contacts")
        XCTAssertEqual(results["invitee_rows"], "Ada,Grace,Linus")
        XCTAssertEqual(results["invitee_address"], "/#records")
        XCTAssertEqual(results["invitee_secret_in_url"], "False", "the secret leaves the address bar once used")
        XCTAssertTrue(results["inviter_members"]?.contains("carol") ?? false, results["inviter_members"] ?? "")
        XCTAssertLessThan(Double(results["inviter_saw_seconds"] ?? "") ?? 99, 5)
        let inviterDevices = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((results["inviter_devices"] ?? "").utf8)) as? [[String]])
        XCTAssertTrue(inviterDevices.contains { $0[0].hasSuffix("(this browser)") && $0[1] == "until the browser closes" }, "\(inviterDevices)")
        let inviteeDevices = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((results["invitee_devices"] ?? "").utf8)) as? [[String]])
        XCTAssertEqual(inviteeDevices.map { $0[1] }, ["kept signed in"], "\(inviteeDevices)")
        XCTAssertTrue(results["invitee_after_revoke"]?.contains("session ended") ?? false, results["invitee_after_revoke"] ?? "")
        XCTAssertEqual(results["phone_console_errors"], "[]")
        print("invitation link to the collection's rows in a new browser: \(results["link_to_rows_seconds"] ?? "?") s; inviter saw it in \(results["inviter_saw_seconds"] ?? "?") s")
        // The server's side: carol is a member with the invited role; the revocation is logged.
        try line.send("m MEMBERS contacts")
        XCTAssertEqual(try line.readLine(), "* MEMBER alice admin")
        XCTAssertEqual(try line.readLine(), "* MEMBER carol write")
        XCTAssertEqual(try line.readLine(), "* MEMBER dave write")
        XCTAssertTrue(server.log().contains("action=invitation_revoke"), server.log())
        XCTAssertTrue(server.log().contains("action=redeem collection=contacts role=write"), server.log())
    }

    func testAServerAdminAddsPromotesResetsAndRemovesAUserInTheConsole() throws {
        try serveTeam()
        let results = try browse("team-users", [try screenshotFolder()], as: ("root", "rootpw"))
        XCTAssertEqual(results["added"], "added dave")
        XCTAssertEqual(results["dave_logs_in"], "w OK WHOAMI dave user")
        XCTAssertEqual(results["dave_whoami"], "w OK WHOAMI dave admin")
        XCTAssertEqual(results["dave_connection_after_reset"], "* BYE REVOKED")
        XCTAssertEqual(results["dave_new_password"], "w OK WHOAMI dave admin")
        XCTAssertEqual(results["users_left"], "alice,root")
        XCTAssertTrue(results["devices_kept"]?.contains("kept signed in") ?? false, results["devices_kept"] ?? "")
        for action in ["user_add", "user_admin_on", "user_passwd", "user_remove"] {
            XCTAssertTrue(server.log().contains("audit action=\(action) user=dave"), "no audit line for \(action)")
        }
    }

    func testAPersonChangesTheirOwnPasswordInTheConsoleAndTheirOtherDevicesAreLoggedOut() throws {
        let results = try browse("team-password", ["looking-glass"])
        XCTAssertEqual(results["wrong_current"], "the current password is wrong")
        XCTAssertEqual(results["changed"], "password changed; your other devices are logged out")
        XCTAssertEqual(results["other_device"], "* BYE REVOKED")
        XCTAssertEqual(results["still_signed_in"], "alice")
    }
}
