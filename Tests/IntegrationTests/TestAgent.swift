import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// A real `plistsync agent` process mirroring a temporary folder.
final class TestAgent: MirrorView {
    let directory: String
    let device: String
    private let serverPort: () -> Int
    private let user: String
    private let passwordFile: String
    private var process: Process?
    private let logPath: String

    convenience init(server: TestServer, user: String, password: String, device: String) throws {
        try self.init(port: { server.port }, user: user, password: password, device: device)
    }

    /// An agent of a server that is not a `TestServer` (a rogue one, say).
    /// `directory`: where the mirror goes (a small file system, say); a fresh temp folder by default.
    init(port: @escaping () -> Int, user: String, password: String, device: String, directory: String? = nil) throws {
        serverPort = port
        self.user = user
        self.device = device
        let scratch = NSTemporaryDirectory() + "plistsync-agent-\(device)-" + UUID().uuidString
        self.directory = directory ?? scratch
        passwordFile = scratch + ".password"
        logPath = scratch + ".log"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        try (password + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
    }

    /// `login`: how the agent logs in (default: `--password-file` with the password).
    /// `serverList`: `--server` as given (several servers sharing a store), else this agent's one.
    func start(extra: [String] = [], login: [String]? = nil, serverList: String? = nil) throws {
        process = try PlistSyncBinary.launch(
            ["agent", "--server", serverList ?? "127.0.0.1:\(serverPort())", "--user", user] + (login ?? ["--password-file", passwordFile])
                + ["--dir", directory, "--device", device] + extra, log: logPath)
    }

    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        guard let process, process.isRunning else { return 0 }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        self.process = nil
        return process.terminationStatus
    }

    var isRunning: Bool { process?.isRunning ?? false }

    var pid: Int32 { process?.processIdentifier ?? 0 }

    /// Waits for the process to end by itself; its exit status, or nil if it still runs.
    func exitStatus(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while let process, process.isRunning, Date() < deadline { usleep(20_000) }
        guard let process, !process.isRunning else { return nil }
        return process.terminationStatus
    }

    func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        stop(signal: SIGKILL)
        // PLISTSYNC_KEEP_TEST_FILES=1 leaves the folders and logs for a look after a failure.
        guard ProcessInfo.processInfo.environment["PLISTSYNC_KEEP_TEST_FILES"] == nil else { return }
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: passwordFile)
        try? FileManager.default.removeItem(atPath: logPath)
    }
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 10, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line,
                _ condition: () -> Bool) {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return }
        usleep(20_000)
    }
    XCTFail("condition not met within \(seconds) s. \(message())", file: file, line: line)
}

/// Polls `condition` for `seconds` and fails the moment it stops holding: how a test says
/// "this does not happen" without sleeping and then looking once.
func holds(_ seconds: Double, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line,
           _ condition: () -> Bool) {
    let deadline = Date().addingTimeInterval(seconds)
    repeat {
        guard condition() else { return XCTFail("condition stopped holding. \(message())", file: file, line: line) }
        usleep(20_000)
    } while Date() < deadline
}

/// A fresh server with the account alice and two agents of hers, `a` (laptop) and `b`
/// (desktop), made for each test and not yet started; all three run inside the test process.
class TwoAgentTestCase: XCTestCase {
    var server: LiveServer!
    var a: LiveAgent!
    var b: LiveAgent!
    /// alice's password.
    var password: String { "pw" }

    override func setUpWithError() throws {
        server = try LiveServer.running(users: [("alice", password)])
        a = LiveAgent(server: server, user: "alice", password: password, device: "laptop")
        b = LiveAgent(server: server, user: "alice", password: password, device: "desktop")
    }

    override func tearDown() {
        a = nil
        b = nil
        server = nil
    }
}
