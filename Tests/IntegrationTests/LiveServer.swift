import EventLoop
import Foundation
import PlistSyncTesting
import SQLiteStore
import SyncCore
import XCTest
@testable import ServerHTTP
import ServerKit

/// A server running inside the test process on a loop thread of its own: a real listener on
/// 127.0.0.1 and a real SQLite data folder, as `plistsync serve` has, without starting a
/// process. What needs the process itself (kill -9, signals, its memory, its exit status, the
/// options as the command line reads them) stays with `TestServer`.
final class LiveServer: ListeningServer {
    let dataPath: String
    private(set) var port = 0
    private(set) var httpPort = 0
    private let configure: (inout ServerConfiguration) -> Void
    private var running: LoopThread?
    /// Where this server's lines begin in the process's server log.
    private let logStart: Int

    /// The server and its loop, handed to the loop thread, which lets go of the server when
    /// the loop ends.
    private final class HostedServer: @unchecked Sendable {
        var server: Server?
        let loop: EventLoop

        init(server: Server, loop: EventLoop) {
            self.server = server
            self.loop = loop
        }
    }

    /// Every in-process server's log lines (the log is one per process).
    private static let logLines: LogLines = {
        let lines = LogLines()
        ServerLog.output = { lines.append($0) }
        return lines
    }()

    /// `configure` sets what `serve`'s options would (the listener is 127.0.0.1, port 0 at first).
    init(dataPath: String? = nil,
         configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) throws {
        self.dataPath = dataPath ?? (NSTemporaryDirectory() + "plistsync-live-" + UUID().uuidString)
        self.configure = configure
        logStart = Self.logLines.count
        // The log as `serve` writes it by default: a test before this one may have quieted the
        // process's one log (the simulation does), and this server's tests read its info lines.
        ServerLog.quiet = false
        ServerLog.format = .text
        try FileManager.default.createDirectory(atPath: self.dataPath, withIntermediateDirectories: true)
    }

    /// A started server with these accounts.
    static func running(users: [(String, String)] = [("alice", "pw")],
                        configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) throws -> LiveServer {
        let server = try LiveServer(configure: configure)
        for (name, password) in users { try server.addUser(name, password: password) }
        try server.start()
        return server
    }

    var storeArguments: [String] { ["--data", dataPath] }

    /// Starts the server (again, after a stop, on the same port).
    func start() throws {
        // A client that hangs up must cost one connection, as in `plistsync serve`.
        ProcessSignals.ignoreBrokenPipe()
        var configuration = ServerConfiguration()
        configuration.dataPath = dataPath
        configure(&configuration)
        configuration.listen = SocketAddress(host: "127.0.0.1", port: port)
        if httpPort != 0, configuration.httpListen != nil { configuration.httpListen = SocketAddress(host: "127.0.0.1", port: httpPort) }
        let loop = EventLoop()
        let store = try SQLiteServerStore(folder: DataFolder(path: dataPath))
        let server = try Server(configuration: configuration, store: store, loop: loop) { core in HTTPFront(core: core, tls: configuration.tls) }
        try server.start(stopOnSignals: false)
        port = Int(server.boundAddress?.port ?? 0)
        httpPort = Int(server.httpAddress?.port ?? 0)
        let hosted = HostedServer(server: server, loop: loop)
        let doorbell = LoopDoorbell(loop: loop) { [weak hosted] in hosted?.server?.shutdown() }
        running = LoopThread(name: "live server", stop: doorbell.ring) {
            hosted.loop.run()
            doorbell.close()
            _ = hosted.loop.close()
            // Let go of the store (and the folder's server lock) before a restart opens it again.
            hosted.server = nil
        }
    }

    /// Shuts down as SIGTERM does (clients get `* BYE SHUTDOWN`) and waits for the loop to end.
    func stop() {
        guard let running else { return }
        self.running = nil
        XCTAssertTrue(running.stop(waitingUpTo: 15), "the in-process server did not stop")
    }

    var isRunning: Bool { running != nil }

    /// The server log since this server was made (servers run one at a time in a test).
    func log() -> String { Self.logLines.since(logStart) }

    deinit {
        stop()
        guard ProcessInfo.processInfo.environment["PLISTSYNC_KEEP_TEST_FILES"] == nil else { return }
        try? FileManager.default.removeItem(atPath: dataPath)
    }
}
