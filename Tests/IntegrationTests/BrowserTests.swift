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
    func browse(_ scenario: String, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> [String: String] {
        let (status, output, error) = try PlistSyncBinary.runTool(
            "/usr/bin/python3", [Self.script, scenario, "http://127.0.0.1:\(server.httpPort)/", String(server.port), "alice", "pw"] + arguments)
        XCTAssertEqual(status, 0, "\(scenario): \(error)\n\(output)", file: file, line: line)
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
}
