import Foundation
import XCTest

/// The web console in a real headless Chromium driven by Selenium (Tests/Browser/console.py,
/// Debian's chromium, chromium-driver and python3-selenium): each test sets up a server (and
/// agents or line-protocol clients), runs one scenario in the browser, and checks what reached
/// the other side.
final class BrowserTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Browser/console.py").path

    var server: TestServer!
    var line: LineClient!

    override func setUpWithError() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"] {
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: Deploy/test.sh installs chromium, chromium-driver and python3-selenium")
        }
        server = try TestServer(extraArguments: ["--http-listen", "127.0.0.1:0"])
        try server.addUser("alice", password: "pw")
        try server.start()
        line = try server.login("alice", "pw")
        try line.expect("c CREATE contacts", equals: "c OK CREATE contacts")
        try line.expect(#"a PUT contacts Ada 0 {"name":"Ada","phone":"555-0111"}"#, equals: "a OK PUT contacts Ada 1 1")
        try line.expect(#"b PUT contacts Grace 0 {"name":"Grace","phone":"555-0142"}"#, equals: "b OK PUT contacts Grace 1 2")
        try line.expect(#"d PUT contacts Linus 0 {"name":"Linus","phone":"555-0199"}"#, equals: "d OK PUT contacts Linus 1 3")
    }

    /// XCTest keeps every test case object until the run ends: the server is stopped here.
    override func tearDown() {
        line = nil
        server = nil
    }

    /// Runs a scenario: its `RESULT key value` lines by key (it failed the test if it failed).
    func browse(_ scenario: String, _ arguments: [String], url: String? = nil, as account: (user: String, password: String) = ("alice", "pw"),
                file: StaticString = #filePath, line: UInt = #line) throws -> [String: String] {
        let (status, output, error) = try PlistSyncBinary.runTool(
            "/usr/bin/python3", [Self.script, scenario, url ?? "http://127.0.0.1:\(server.httpPort)/", String(server.port), account.user, account.password] + arguments)
        XCTAssertEqual(status, 0, "\(scenario): \(output)\n\(error)", file: file, line: line)
        var results: [String: String] = [:]
        for resultLine in output.split(separator: "\n") where resultLine.hasPrefix("RESULT ") {
            let parts = resultLine.dropFirst("RESULT ".count).split(separator: " ", maxSplits: 1)
            results[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        XCTAssertEqual(results["console_errors"], "[]", "the page logged errors", file: file, line: line)
        return results
    }

    func testLoggingInShowsTheCollectionInOrderAndTheTokenCookieIsNotReadableByScript() throws {
        let results = try browse("login", ["contacts"])
        XCTAssertEqual(results["refused"], #""wrong user name, password or token""#)
        XCTAssertEqual(results["who"], "alice")
        XCTAssertEqual(results["rows"], "Ada,Grace,Linus")
        XCTAssertEqual(results["cookie_visible_to_script"], #""""#, "HttpOnly: the page's scripts cannot read the token")
    }

    func testARecordAddedThroughTheLineProtocolAppearsWithinASecondWithoutAReload() throws {
        let results = try browse("live-add", ["contacts", "Margaret"])
        XCTAssertEqual(results["put"], "p OK PUT contacts Margaret 1 4")
        XCTAssertLessThan(Double(results["seconds"] ?? "") ?? 99, 1.0)
        XCTAssertEqual(results["not_reloaded"], "True")
        XCTAssertEqual(results["flashed"], "True", "a changed row is highlighted")
        XCTAssertEqual(results["name"], "Added by the line protocol")
    }

    func testAFieldEditedInTheBrowserReachesALineProtocolSubscriber() throws {
        try line.expect("s SUB contacts SINCE 3", equals: "s OK SUB contacts 3")
        let results = try browse("edit", ["contacts", "Grace", "phone", "555-7777"])
        XCTAssertEqual(results["message"], "saved phone of Grace")
        XCTAssertEqual(try line.line(), #"* CHANGE contacts 4 Grace 2 a1 {"name":"Grace","phone":"555-7777"}"#)
    }

    func testAConflictMadeFromTwoPlacesIsResolvedInTheBrowser() throws {
        let results = try browse("conflict", ["contacts", "Ada", "phone", "555-MINE", "555-THEIRS"])
        XCTAssertEqual(results["their_put"], "p OK PUT contacts Ada 2 4")
        XCTAssertEqual(results["dialog_mine"], "555-MINE")
        XCTAssertEqual(results["dialog_theirs"], "555-THEIRS")
        try line.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 3 a0 {"name":"Ada","phone":"555-MINE"}"#)
    }

    func testDraggingARowReordersTheAgentsOrderFile() throws {
        let agent = try TestAgent(server: server, user: "alice", password: "pw", device: "laptop")
        try agent.start()
        eventually(15, agent.log()) { agent.order("contacts") == ["Ada", "Grace", "Linus"] }
        let results = try browse("drag", ["contacts", "Linus", "Ada"])
        XCTAssertEqual(results["order"], "Linus,Ada,Grace")
        eventually(10, agent.log()) { agent.order("contacts") == ["Linus", "Ada", "Grace"] }
    }

    func testRevokingADeviceInTheBrowserClosesThatDevicesConnection() throws {
        let tokenLine = try line.expect(#"t TOKEN NEW "alice's phone""#, prefix: "t OK TOKEN ")
        let phone = try server.connect()
        try phone.expect("a AUTH TOKEN \(tokenLine.dropFirst("t OK TOKEN ".count))", equals: "a OK AUTH alice")
        let results = try browse("revoke", ["alice's phone"])
        XCTAssertEqual(results["message"], "revoked alice's phone")
        XCTAssertEqual(try phone.readLine(timeout: 5), "* BYE REVOKED")
        try line.expect("p PING", equals: "p OK PONG")
    }

    // MARK: - Issue 29: a console people can work in

    func testOverlappingRefreshesShowEachRowOnce() throws {
        let results = try browse("overlap", ["contacts"])
        XCTAssertEqual(results["members_rows"], "1", "alice alone, once")
        XCTAssertEqual(results["devices_rows"], "1", "this browser's token, once")
    }

    func testColumnsKeepTheCollectionsOrderCanBeArrangedAndTheViewFilteredAndSorted() throws {
        let results = try browse("columns", ["contacts", "Zelda"])
        XCTAssertEqual(results["put"], "p OK PUT contacts Zelda 1 4")
        XCTAssertEqual(results["natural"], "id,name,phone,email", "a new field comes last, not in the middle")
        XCTAssertEqual(results["arranged"], "id,name,email")
        XCTAssertEqual(results["remembered"], "id,name,email", "remembered for the collection")
        XCTAssertEqual(results["filtered"], "Grace")
        XCTAssertEqual(results["sorted"], "Zelda,Linus,Grace,Ada")
        XCTAssertEqual(results["drag_off"], "True", "no reordering from a sorted view")
        try line.expect("l LIST contacts", equals: #"* RECORD contacts Ada 1 a0 {"name":"Ada","phone":"555-0111"}"#)
        XCTAssertEqual(try line.line(), #"* RECORD contacts Grace 1 a1 {"name":"Grace","phone":"555-0142"}"#, "sorting the view left the list's order alone")
    }

    /// Issue 44 item 5: a field added to a record early in the list came first (records' keys
    /// are sorted: `email` before `name`); adding an id that exists said "If-Match is stale";
    /// the history button was the emoji 🕘, an empty box without an emoji font.
    func testTheConsolesSmallDefects() throws {
        let results = try browse("defects", ["contacts", "Ada", "Grace"])
        XCTAssertEqual(results["before"], "id,name,phone")
        XCTAssertEqual(results["put"], "p OK PUT contacts Ada 2 4")
        XCTAssertEqual(results["after"], "id,name,phone,email", "a new field comes last, wherever it first appears")
        XCTAssertEqual(results["history_text"], #""""#, "no emoji: an SVG icon, named by its label")
        XCTAssertGreaterThan(Double(results["history_icon_width"] ?? "") ?? 0, 8)
        XCTAssertEqual(results["add_existing"], #"a record "Grace" already exists in contacts (rev 1): pick another id, or edit that one"#)
    }

    /// Issue 44 item 1: the console is an installable app whose shell opens with the server
    /// gone, saying it is offline (a reload showed the browser's "This site can't be reached").
    func testTheConsoleIsInstallableAndItsShellOpensWithTheServerGone() throws {
        let results = try browse("offline-shell", ["contacts", String(server.pid)])
        let manifest = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((results["manifest"] ?? "").utf8)) as? [String: Any], results["manifest"] ?? "")
        XCTAssertEqual(manifest["display"] as? String, "standalone")
        XCTAssertEqual(manifest["start_url"] as? String, "/")
        XCTAssertEqual((manifest["icons"] as? [[String: String]])?.compactMap { $0["sizes"] }.sorted(), ["192x192", "512x512", "512x512"])
        XCTAssertEqual(results["offline_banner_online"], "False")
        XCTAssertEqual(results["live_dot"], "live", "the live dot is grey once the server is gone")
        XCTAssertEqual(results["title"], "PlistSync", "the console's page, not the browser's error page")
        XCTAssertTrue(results["offline_text"]?.hasPrefix("Offline: the server cannot be reached.") ?? false, results["offline_text"] ?? "")
        XCTAssertLessThan(Double(results["offline_start_seconds"] ?? "") ?? 99, 1.0, "the cached shell opens in under a second")
        print("offline shell: opened in \(results["offline_start_seconds"] ?? "?") s with the server gone")
    }

    /// Issue 44 item 1 over HTTPS: `serve --tls`, a browser that trusts its certificate, the
    /// worker installed, the shell opening with the server gone.
    func testOverHTTPSTheShellIsKeptAndOpensWithTheServerGone() throws {
        _ = server.stop()
        let secure = try TestServer(extraArguments: ["--http-listen", "127.0.0.1:0", "--tls"], dataPath: server.dataPath)
        try secure.start()
        let results = try browse("offline-shell-https", ["contacts", String(secure.pid), secure.dataPath + "/tls/cert.pem"],
                                 url: "https://127.0.0.1:\(secure.httpPort)/")
        XCTAssertEqual(results["protocol"], "https:")
        XCTAssertEqual(results["is_secure_context"], "True")
        XCTAssertEqual(results["title"], "PlistSync", "the console's page, not the browser's error page")
        XCTAssertTrue(results["offline_text"]?.hasPrefix("Offline: the server cannot be reached.") ?? false, results["offline_text"] ?? "")
        XCTAssertEqual(results["https_console_errors"], "[]")
    }

    /// Issue 44 item 2 (begun): the collections a person opened are kept in IndexedDB with the
    /// seq they are current to; reopened, the stream resumes after it (what changed meanwhile,
    /// a delete too, arrives); with the server gone they still show.
    func testOpenedCollectionsAreKeptOnTheDeviceAndShowWithTheServerGone() throws {
        let results = try browse("replica", ["contacts", String(server.pid)])
        XCTAssertEqual(results["put"], "p OK PUT contacts Margaret 1 4")
        XCTAssertEqual(results["del"], "d OK DEL contacts Linus 2 5")
        XCTAssertEqual(results["resumed"], "Ada,Grace,Margaret")
        XCTAssertEqual(results["resumed_after"], "3", "the stream started after the kept seq, not from 0")
        XCTAssertEqual(results["offline_rows"], "Ada,Grace,Margaret")
        XCTAssertEqual(results["offline_phone"], "555-0123")
        XCTAssertEqual(results["picker"], "contacts (kept on this device)")
        XCTAssertEqual(results["offline_banner"], "True")
    }

    /// The scenario's own server: this test's is stopped and the scenario runs it on the same
    /// ports and data folder, stopping and starting it; an agent of alice's mirrors `contacts`.
    private func offlineScenario(_ scenario: String, _ extra: [String] = []) throws -> [String: String] {
        let agent = try TestAgent(server: server, user: "alice", password: "pw", device: "desk")
        try agent.start()
        let mirror = agent.directory + "/contacts"
        eventually(20, "the agent's mirror") { FileManager.default.fileExists(atPath: mirror + "/Ada.plist") }
        let command = [PlistSyncBinary.url.path, "serve", "--listen", "127.0.0.1:\(server.port)", "--http-listen", "127.0.0.1:\(server.httpPort)",
                       "--data", server.dataPath]
        let commandText = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        let log = NSTemporaryDirectory() + "plistsync-offline-" + UUID().uuidString + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        _ = server.stop()
        let results = try browse(scenario, ["contacts", commandText, mirror, log] + extra)
        agent.stop()
        return results
    }

    /// Issue 44 items 2 and 3: a phone and a desktop edit with the server stopped (the phone
    /// reloading meanwhile) and an agent edits another field of a record the phone changed;
    /// back online both fields survive, the field both browsers changed makes exactly one
    /// conflict copy (listed in the console), and 100 edits queued by the script client reach
    /// the server and the other console in under a second.
    func testEditsMadeOfflineAreKeptAcrossAReloadAndMergedLikeTheAgentWhenTheServerReturns() throws {
        let results = try offlineScenario("offline-edits")
        XCTAssertEqual(results["offline_message"], "saved phone of Grace on this device; it waits for the server")
        XCTAssertEqual(results["pending_before_reload"], "2 edits waiting")
        XCTAssertEqual(results["pending_after_reload"], "2 edits waiting", "the outbox survives a reload with no server")
        XCTAssertEqual(results["pending_marks"], "Ada,Grace")
        XCTAssertEqual(results["pending_mark_text"], "waiting")
        XCTAssertEqual(results["ada"], #"{"name": "Ada Lovelace", "phone": "555-PHONE"}"#, "the phone's field and the agent's field both survive")
        let grace = results["grace"] ?? ""
        let copies = results["copies"] ?? ""
        XCTAssertTrue(grace.contains("555-DESK") || grace.contains("555-PHONE2"), grace)
        XCTAssertEqual(copies.components(separatedBy: "sync-conflict").count, 1, "the copies' fields only")
        XCTAssertEqual((results["copy_ids"] ?? "").split(separator: ",").count, 1, "exactly one conflict copy: \(results["copy_ids"] ?? "")")
        XCTAssertTrue((results["copy_ids"] ?? "").hasPrefix("Grace.sync-conflict-"), results["copy_ids"] ?? "")
        XCTAssertTrue(copies.contains(grace.contains("555-DESK") ? "555-PHONE2" : "555-DESK"), "the other browser's value is the copy: \(copies)")
        XCTAssertTrue((results["desk_conflicts"] ?? "").contains("Grace"), results["desk_conflicts"] ?? "")
        XCTAssertEqual(results["script_pending"], "100")
        XCTAssertEqual(results["desk_rows"], "103")
        // The goal (< 1 s) is the product's, measured on a release build (PLISTSYNC_BIN; 0.54-0.58 s
        // when this was written); the debug build's server commits slower (0.75-0.93 s then; on a
        // slower day, 2026-12-07, main before issue 47's rows behind took 1.43-1.50 s and the build
        // after it 1.52-1.67 s in the same run, and 2.03 s once in a full run: the bound is the
        // order of magnitude, the figure is printed).
        let bound = ProcessInfo.processInfo.environment["PLISTSYNC_BIN"] == nil ? 3.0 : 1.0
        XCTAssertLessThan(Double(results["hundred_seconds"] ?? "") ?? 99, bound, "100 queued edits reach the server and the other console")
        print("offline edits: back in sync \(results["reconnect_seconds"] ?? "?") s after the server returned; 100 queued edits on the other console in \(results["hundred_seconds"] ?? "?") s")
    }

    /// Issue 44 with Chromium's own offline mode (the server up, the page's stream still open):
    /// an edit, a move, an add and a delete wait instead of failing, and go up (the edit merged
    /// with another person's edit of another field) once the browser is online again.
    func testAnEditMadeInTheBrowsersOfflineModeWaitsAndMergesWhenItIsBack() throws {
        let results = try browse("browser-offline", ["contacts"])
        XCTAssertEqual(results["message"], "saved phone of Ada on this device; it waits for the server")
        XCTAssertEqual(results["added_message"], "added Margaret on this device; it waits for the server")
        XCTAssertEqual(results["pending"], "4 edits waiting", "the field edit, the order, the record added, the record deleted")
        XCTAssertEqual(results["pending_marks"], "Linus,Ada,Margaret", "the rows moved, edited and added, not every row")
        XCTAssertEqual(results["their_put"], "p OK PUT contacts Ada 2 4")
        XCTAssertEqual(results["create_offline"], "creating a collection needs the server, which cannot be reached; records can still be edited here")
        XCTAssertEqual(results["ada"], #"{"name": "Ada King", "phone": "555-TUNNEL"}"#)
        XCTAssertEqual(results["order"], "Linus,Ada,Margaret", "the move, the add and the delete made offline")
    }

    /// A session that ends while an edit waits (the browser's device revoked elsewhere) keeps
    /// the edit: the console asks for a login and sends it after.
    func testAnEditWaitingWhenTheSessionEndsIsSentAfterTheNextLogin() throws {
        let results = try browse("session-ended", ["contacts"])
        XCTAssertEqual(results["revoked"], "1")
        XCTAssertEqual(results["message"], "Your session ended: log in again (edits made here are kept and sent after the login).")
        XCTAssertFalse(results["before_login"]?.contains("555-LATER") ?? true, results["before_login"] ?? "")
        XCTAssertEqual(results["ada"], #"{"name": "Ada", "phone": "555-LATER"}"#)
    }

    /// Issue 44's safety goal: two browsers and an agent, 20 stops and starts of the server,
    /// reloads while offline; every value typed is on the server afterwards (in a record, a
    /// conflict copy, or a version a later edit replaced).
    func testNoEditIsLostOverTwentyServerRestarts() throws {
        let results = try offlineScenario("offline-stress", ["20", "44"])
        XCTAssertEqual(results["missing"], "[]")
        XCTAssertEqual(results["typed"], "210")
        print("offline stress: \(results["typed"] ?? "?") values typed over 20 restarts, none lost")
    }

    func testANewRecordIsWrittenOnceWithAllItsFields() throws {
        try line.expect("s SUB contacts SINCE 3", equals: "s OK SUB contacts 3")
        let results = try browse("add-form", ["contacts", "Margaret", "Margaret Hamilton", "555-0123"])
        XCTAssertEqual(results["phone"], "555-0123")
        XCTAssertEqual(try line.line(), #"* CHANGE contacts 4 Margaret 1 a3 {"name":"Margaret Hamilton","phone":"555-0123"}"#, "one write: no empty record first")
        try line.expect("p PING", equals: "p OK PONG")
    }

    func testTheConflictDialogShowsEveryFieldTheOtherPersonChanged() throws {
        let results = try browse("conflict-all", ["contacts", "Ada"])
        XCTAssertEqual(results["their_put"], "p OK PUT contacts Ada 2 4")
        XCTAssertEqual(results["others"], "name,title")
        try line.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 3 a0 {"name":"Ada King","phone":"555-MINE","title":"Countess"}"#)
    }

    func testAListIsEditedAsTypedJSON() throws {
        try line.expect(#"t PUT contacts Ada 1 {"name":"Ada","phone":"555-0111","tags":["math",1]}"#, equals: "t OK PUT contacts Ada 2 4")
        let results = try browse("json-edit", ["contacts", "Ada", #"["math",1,2.5,{"k":true}]"#])
        XCTAssertEqual(results["message"], "saved tags of Ada")
        try line.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 3 a0 {"name":"Ada","phone":"555-0111","tags":["math",1,2.5,{"k":true}]}"#)
    }

    func testADeleteCanBeUndoneAndTheRecordComesBackInItsPlace() throws {
        let results = try browse("undo-delete", ["contacts", "Grace", "Ada,Grace,Linus"])
        XCTAssertEqual(results["gone"], "Ada,Linus")
        XCTAssertEqual(results["back"], "Ada,Grace,Linus")
        let got = try line.expect("g GET contacts Grace", prefix: "g OK GET contacts Grace ")
        XCTAssertTrue(got.hasSuffix(#"{"name":"Grace","phone":"555-0142"}"#), got)
    }

    func testAPhoneShowsRecordsAsCardsWithTouchSizedButtons() throws {
        let results = try browse("cards", ["contacts"])
        XCTAssertEqual(results["display"], "grid")
        XCTAssertEqual(results["head_shown"], "False")
        XCTAssertGreaterThanOrEqual(Int(results["smallest_button"] ?? "") ?? 0, 44)
        XCTAssertLessThanOrEqual(Int(results["page_width"] ?? "") ?? 9999, 390, "nothing scrolls sideways")
    }

    func testCollectionsAreCreatedRenamedAndDroppedFromTheConsole() throws {
        let results = try browse("collections", ["inventory", "stock"])
        XCTAssertTrue(results["after_rename"]?.split(separator: ",").contains("stock") ?? false, results["after_rename"] ?? "")
        XCTAssertEqual(results["message"], "dropped stock")
        XCTAssertEqual(results["kept"], "contacts", "the device keeps no copy under the old name or of the dropped collection")
        try line.send("c COLLECTIONS")
        var listed: [String] = []
        while let next = try line.readLine(timeout: 5), next != "c OK COLLECTIONS 1" {
            if next.hasPrefix("* COLLECTION ") { listed.append(next) }
        }
        XCTAssertEqual(listed, ["* COLLECTION contacts admin 3"], "the one made in the console was dropped")
    }

    func testARecordsHistoryIsShownAndAVersionRestored() throws {
        try line.expect(#"u PUT contacts Ada 1 {"name":"Ada","phone":"555-0112"}"#, equals: "u OK PUT contacts Ada 2 4")
        try line.expect(#"v PUT contacts Ada 2 {"name":"Ada Lovelace","phone":"555-0113"}"#, equals: "v OK PUT contacts Ada 3 5")
        let results = try browse("history", ["contacts", "Ada", "1"])
        XCTAssertEqual(results["versions"], "2,1", "newest first")
        XCTAssertEqual(results["message"], "restored rev 1 of Ada")
        try line.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 4 a0 {"name":"Ada","phone":"555-0111"}"#)
    }

    /// Issue 47: the Activity view shows who changed what from which device; a lost laptop's
    /// changes are undone from the console, after a preview, as new revisions; a change someone
    /// else made since is kept. With no network the view says the activity is the server's.
    func testTheActivityViewUndoesWhatALostDeviceChanged() throws {
        let token = try line.expect(#"t TOKEN NEW "stolen laptop""#, prefix: "t OK TOKEN ").split(separator: " ")[3]
        let laptop = try server.connect()
        try laptop.expect("a AUTH TOKEN \(token)", equals: "a OK AUTH alice")
        try laptop.expect(#"p PUT contacts Ada 1 {"name":"Ada","phone":"000"}"#, equals: "p OK PUT contacts Ada 2 4")
        try laptop.expect("d DEL contacts Grace 1", equals: "d OK DEL contacts Grace 2 5")
        try laptop.expect(#"s PUT contacts Spam 0 {"name":"Buy now"}"#, prefix: "s OK PUT contacts Spam 1 6")
        try laptop.expect(#"l PUT contacts Linus 1 {"name":"Linus","phone":"bad"}"#, equals: "l OK PUT contacts Linus 2 7")
        // Someone else fixes Linus by hand after the laptop: the undo must keep that.
        try line.expect(#"f PUT contacts Linus 2 {"name":"Linus","phone":"555-0200"}"#, equals: "f OK PUT contacts Linus 3 8")
        let device = try line.expect("w TOKEN LIST", prefix: "* TOKEN ").split(separator: " ")[2]
        XCTAssertEqual(try line.line(), "w OK TOKEN LIST 1")
        let screenshot = NSTemporaryDirectory() + "plistsync-activity.png"
        let results = try browse("activity", ["contacts", String(device), screenshot])
        XCTAssertEqual(results["devices"], "password login,stolen laptop,stolen laptop,stolen laptop,stolen laptop,password login,password login,password login")
        XCTAssertEqual(results["records"], "Linus,Linus,Spam,Grace,Ada,Linus,Grace,Ada", "newest first")
        XCTAssertEqual(results["preview"], #"Ada → name: Ada, phone: 555-0111;Grace → name: Grace, phone: 555-0142;Spam → (deleted);Linus: kept, changed since by alice"#)
        XCTAssertEqual(results["message"], "undid 3 record(s) of alice on stolen laptop; 1 changed since by others, kept")
        XCTAssertEqual(results["phone_overflow"], "0", "on a phone the changes are cards, nothing scrolls sideways")
        XCTAssertEqual(results["offline_note"],
                       "The activity is kept on the server, which cannot be reached now: it shows here once the server answers again.")
        XCTAssertEqual(results["offline_rows"], "0")
        try line.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 3 a0 {"name":"Ada","phone":"555-0111"}"#)
        try line.expect("g GET contacts Grace", equals: #"g OK GET contacts Grace 3 a1 {"name":"Grace","phone":"555-0142"}"#)
        try line.expect("g GET contacts Spam", equals: "g OK GET contacts Spam 2 - DELETED")
        try line.expect("g GET contacts Linus", equals: #"g OK GET contacts Linus 3 a2 {"name":"Linus","phone":"555-0200"}"#)
    }
}
