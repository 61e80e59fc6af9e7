import AgentKit
import EventLoop
import Foundation
import PlistSyncTesting
import XCTest

/// An agent running inside the test process on a loop thread of its own, mirroring a temporary
/// folder with the real file system and inotify over a real TCP connection, as
/// `plistsync agent` does, without starting a process. Killing it mid-write (kill -9) and
/// what the command line itself does stay with `TestAgent`.
final class LiveAgent: MirrorView {
    let directory: String
    let device: String
    private let serverPort: () -> Int
    private let user: String
    private let password: String
    private let logLines = LogLines()
    private var running: LoopThread?

    convenience init(server: ListeningServer, user: String, password: String, device: String) {
        self.init(port: { server.port }, user: user, password: password, device: device)
    }

    /// `directory`: where the mirror goes; a fresh temp folder by default.
    init(port: @escaping () -> Int, user: String, password: String, device: String, directory: String? = nil) {
        serverPort = port
        self.user = user
        self.password = password
        self.device = device
        self.directory = directory ?? NSTemporaryDirectory() + "plistsync-live-agent-\(device)-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        try? (password + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
    }

    /// `configure` sets what the command line's options would (`--collections`, `--debounce-ms`…).
    func start(_ configure: (inout AgentConfiguration) -> Void = { _ in }) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = AgentConfiguration(
            server: SocketAddress(host: "127.0.0.1", port: serverPort()), user: user, credential: .password(password),
            directory: directory, device: device)
        configure(&configuration)
        let agent = try Agent(configuration: configuration, log: { [logLines] in logLines.append($0) })
        let handed = HandedOver(agent)
        running = LoopThread(name: "live agent \(device)", stop: { handed.value.requestStop() }) { [logLines] in
            do {
                try handed.value.run(stopOnSignals: false)
            } catch {
                logLines.append("the agent stopped: \(error)")
            }
        }
    }

    /// Stops the agent as SIGTERM does and waits until it has let go of the folder.
    func stop() {
        guard let running else { return }
        self.running = nil
        XCTAssertTrue(running.stop(waitingUpTo: 15), "the in-process agent did not stop")
    }

    var isRunning: Bool { running != nil }

    func log() -> String { logLines.all }

    /// A file holding the password, beside the folder, for commands that log in as the agent does.
    var passwordFile: String { directory + ".password" }

    deinit {
        stop()
        guard ProcessInfo.processInfo.environment["PLISTSYNC_KEEP_TEST_FILES"] == nil else { return }
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: passwordFile)
    }
}
