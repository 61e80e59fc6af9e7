import Foundation
import XCTest

/// Issue 11, item 6: the systemd units pass `systemd-analyze verify`, the server's is hardened
/// (`systemd-analyze security` exposure at most 3), the launchd plist is a valid plist, and the
/// example config file is one `serve` reads.
final class DeployTests: XCTestCase {
    private static let deploy = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Deploy")
    private var scratch: String!

    override func setUpWithError() throws {
        scratch = NSTemporaryDirectory() + "plistsync-deploy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// Runs a tool; (status, stdout + stderr).
    private func run(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// The unit as installed, pointing at the binary under test (verify insists it exists).
    private func installedUnit(_ name: String, as installedName: String? = nil) throws -> String {
        let text = try String(contentsOf: Self.deploy.appendingPathComponent(name), encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/plistsync", with: PlistSyncBinary.url.path)
        let path = scratch + "/" + (installedName ?? name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func requireSystemdAnalyze() throws {
        guard (try? run("systemd-analyze", ["--version"]))?.0 == 0 else { throw XCTSkip("systemd-analyze is not installed") }
    }

    func testTheUnitsVerify() throws {
        try requireSystemdAnalyze()
        for (unit, installed) in [("plistsync.service", "plistsync.service"), ("plistsync-agent@.service", "plistsync-agent@alice.service")] {
            let (status, output) = try run("systemd-analyze", ["verify", try installedUnit(unit, as: installed)])
            XCTAssertEqual(status, 0, output)
            XCTAssertFalse(output.contains(installed), "no complaint about the unit: \(output)")
        }
    }

    func testTheServerUnitExposureIsAtMostThree() throws {
        try requireSystemdAnalyze()
        let (status, output) = try run("systemd-analyze", ["security", "--offline=true", try installedUnit("plistsync.service")])
        XCTAssertEqual(status, 0, output)
        let line = try XCTUnwrap(output.split(separator: "\n").first { $0.contains("Overall exposure level") }, output)
        let level = try XCTUnwrap(Double(line.split(separator: ":").last?.split(separator: " ").first ?? ""), String(line))
        XCTAssertLessThanOrEqual(level, 3.0, String(line))
    }

    func testTheLaunchdPlistIsAValidPropertyList() throws {
        let data = try Data(contentsOf: Self.deploy.appendingPathComponent("org.plistsync.agent.plist"))
        let plist = try XCTUnwrap(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        XCTAssertEqual(plist["Label"] as? String, "org.plistsync.agent")
        XCTAssertEqual((plist["ProgramArguments"] as? [String])?.prefix(2), ["/usr/local/bin/plistsync", "agent"])
        if (try? run("python3", ["--version"]))?.0 == 0 {
            let (status, output) = try run("python3", ["-c", "import plistlib,sys; plistlib.load(open(sys.argv[1],'rb'))",
                                                       Self.deploy.appendingPathComponent("org.plistsync.agent.plist").path])
            XCTAssertEqual(status, 0, "plistlib reads it: \(output)")
        }
    }

    func testTheExampleConfigIsWhatServeReads() throws {
        let server = try TestServer(extraArguments: ["--config", Self.deploy.appendingPathComponent("server.conf.example").path])
        try server.addUser("alice", password: "pw")
        try server.start()
        let client = try server.login("alice", "pw")
        let hello = try client.expect("h HELLO 1", prefix: "h OK HELLO 1")
        XCTAssertTrue(hello.contains("\"idle_timeout_seconds\":300"), hello)
    }

    func testAConfigFileWithAnUnknownOptionIsAUsageError() throws {
        try "listen = 127.0.0.1:0\nfrobnicate = 3\n".write(toFile: scratch + "/bad.conf", atomically: true, encoding: .utf8)
        let (code, _, error) = try PlistSyncBinary.run(["serve", "--config", scratch + "/bad.conf", "--data", scratch + "/data"])
        XCTAssertEqual(code, 64, error)
        XCTAssertTrue(error.contains("--frobnicate"), error)
    }
}
