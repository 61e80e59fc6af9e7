import Foundation
import XCTest

/// Issue 19, item 9: the shipped HAProxy configuration (Deploy/cluster/haproxy.cfg) sends a client
/// that reconnects right after its node died to a live node at once (`option redispatch`);
/// without it HAProxy kept trying the dead node until its health check failed, and the client
/// hung for seconds and was dropped.
final class ClusterBalancerTests: XCTestCase {
    private var nodes: [TestServer] = []
    private var haproxy: Process?

    override func tearDown() {
        if let haproxy, haproxy.isRunning {
            haproxy.terminate()
            haproxy.waitUntilExit()
        }
        nodes = []
    }

    /// A port nobody listens on now.
    private func freePort() -> Int {
        let probe = boundLoopbackSocket()
        close(probe.descriptor)
        return probe.port
    }

    /// The shipped configuration with its listener and nodes made local.
    private func configuration(listen port: Int) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try String(contentsOf: root.appendingPathComponent("Deploy/cluster/haproxy.cfg"), encoding: .utf8)
        var lines: [String] = []
        for line in shipped.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("bind ") {
                lines.append("    bind 127.0.0.1:\(port)")
            } else if text.hasPrefix("server node1 ") {
                for (index, node) in nodes.enumerated() { lines.append("    server node\(index + 1) 127.0.0.1:\(node.port) check") }
            } else if !text.hasPrefix("server node") {
                lines.append(String(line))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A client through the balancer, greeted and logged in, or the reply that ended it.
    private func login(_ port: Int) -> (client: LineClient?, reply: String) {
        guard let client = try? LineClient(port: port) else { return (nil, "connect failed") }
        client.timeoutSeconds = 10
        guard (try? client.send("h HELLO 1")) != nil, let hello = try? client.readLine(), hello.hasPrefix("h OK HELLO 1 ") else {
            return (nil, "no greeting")
        }
        guard (try? client.send("a AUTH alice pw")) != nil, let auth = try? client.readLine() else { return (nil, "no answer to AUTH") }
        return (auth == "a OK AUTH alice" ? client : nil, auth)
    }

    func testAClientReconnectingRightAfterItsNodeDiesLandsOnAnotherAtOnce() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/haproxy") else {
            throw XCTSkip("haproxy is not installed (Deploy/test.sh installs it)")
        }
        let url = try TestPostgres.freshDatabase()
        nodes = try (0..<2).map { _ in try TestServer(extraArguments: ["--store", url]) }
        try nodes[0].addUser("alice", password: "pw")
        for node in nodes { try node.start() }
        let port = freePort()
        let configPath = NSTemporaryDirectory() + "plistsync-haproxy-\(UUID().uuidString).cfg"
        try configuration(listen: port).write(toFile: configPath, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: configPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/haproxy")
        process.arguments = ["-f", configPath, "-db"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        haproxy = process
        // Both nodes healthy: a client gets through.
        var first: LineClient?
        eventually(10, "no login through the balancer") {
            first = login(port).client
            return first != nil
        }
        let client = try XCTUnwrap(first)
        try client.expect("c CREATE notes", equals: "c OK CREATE notes")
        // Its node is the one that logged it in; kill -9 it.
        let served = try XCTUnwrap(nodes.firstIndex { $0.log().contains("login user=alice") }, "which node served the client")
        nodes[served].stop(signal: SIGKILL)
        XCTAssertNil(try? client.readLine(timeout: 5), "the client's connection ends with its node")
        // At once, before any health check has marked the node down: new connections are
        // answered by the live node and resume the collection there. Several, kept open: with
        // least-connections balancing the dead node (no connections) is the first choice for
        // every connection after one lands on the live node.
        var resumed: [LineClient] = []
        for attempt in 0..<3 {
            let started = Date()
            let (again, reply) = login(port)
            let seconds = Date().timeIntervalSince(started)
            let client = try XCTUnwrap(again, "reconnection \(attempt + 1) through the balancer: \(reply)")
            XCTAssertLessThan(seconds, 1.0, "reconnection \(attempt + 1) took \(seconds) s")
            try client.expect("s SUB notes SINCE 0", equals: "s OK SUB notes 0")
            resumed.append(client)
        }
    }
}

/// Issue 19, item 2: a node whose database accepts the connection and never answers says so
/// and exits within the connect timeout (libpq alone waits for ever, silently).
final class PostgresStartTests: XCTestCase {
    func testANodeWhoseDatabaseNeverAnswersExitsWithAClearMessage() throws {
        // A listener that completes TCP handshakes (the kernel's backlog) and never reads.
        let (silent, port) = boundLoopbackSocket()
        defer { close(silent) }
        XCTAssertEqual(listen(silent, 16), 0)
        let logPath = NSTemporaryDirectory() + "plistsync-silent-db-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let process = try PlistSyncBinary.launch(
            ["serve", "--listen", "127.0.0.1:0", "--store", "postgresql://plistsync:secret@127.0.0.1:\(port)/plistsync"], log: logPath)
        let started = Date()
        let deadline = started.addingTimeInterval(Double(10 + 15))
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return XCTFail("still waiting for the database after \(Int(Date().timeIntervalSince(started))) s")
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        XCTAssertNotEqual(process.terminationStatus, 0, log)
        XCTAssertTrue(log.contains("connecting to the PostgreSQL database postgresql://plistsync:***@127.0.0.1:\(port)/plistsync"), log)
        XCTAssertTrue(log.contains("cannot use the PostgreSQL database") && log.contains("timeout expired"), log)
        XCTAssertFalse(log.contains("secret"), "the password is never printed: \(log)")
    }
}

/// A TCP socket bound on 127.0.0.1 to `port` (0: a free one), and the port it holds (0 when
/// that one is taken).
func boundLoopbackSocket(port: UInt16 = 0) -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var reuse: Int32 = 1
    setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}
