import Foundation
import XCTest

/// The built `plistsync` executable, found beside the test bundle.
enum PlistSyncBinary {
    static let url: URL = {
        if let path = ProcessInfo.processInfo.environment["PLISTSYNC_BIN"] { return URL(fileURLWithPath: path) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("plistsync")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/plistsync")
    }()

    /// Starts `plistsync` in the background with stdout and stderr appended to `log`.
    static func launch(_ arguments: [String], log path: String) throws -> Process {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        try process.run()
        return process
    }

    /// Runs `plistsync` to completion with `input` on stdin; returns (status, stdout, stderr).
    @discardableResult
    static func run(_ arguments: [String], input: String = "", environment: [String: String] = [:], in directory: String? = nil) throws -> (Int32, String, String) {
        try runTool(url.path, arguments, input: input, environment: environment, in: directory)
    }

    /// Runs another program (curl, python3) to its end: its status, stdout and stderr.
    static func runTool(_ path: String, _ arguments: [String], input: String = "", environment: [String: String] = [:], in directory: String? = nil) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}

/// A real `plistsync serve` process on 127.0.0.1 with a temporary data folder.
final class TestServer: ListeningServer {
    let dataPath: String
    private(set) var port = 0
    /// The HTTP API's port, with `--http-listen`.
    private(set) var httpPort = 0
    private var process: Process?
    private let extraArguments: [String]
    private let logPath: String

    init(extraArguments: [String] = [], dataPath: String? = nil) throws {
        self.dataPath = dataPath ?? (NSTemporaryDirectory() + "plistsync-test-" + UUID().uuidString)
        logPath = NSTemporaryDirectory() + "plistsync-test-" + UUID().uuidString + ".log"
        self.extraArguments = extraArguments
        try FileManager.default.createDirectory(atPath: self.dataPath, withIntermediateDirectories: true)
    }

    /// A started server with these accounts (password logins, low KDF work factor).
    static func running(_ arguments: [String] = [], users: [(String, String)] = [("alice", "pw")]) throws -> TestServer {
        let server = try TestServer(extraArguments: arguments)
        for (name, password) in users { try server.addUser(name, password: password) }
        try server.start()
        return server
    }

    /// Where `plistsync user` finds this server's accounts: its `--store`, else its data folder.
    var storeArguments: [String] {
        if let index = extraArguments.firstIndex(of: "--store") { return ["--store", extraArguments[index + 1]] }
        return ["--data", dataPath]
    }

    /// Passwords set over the wire are hashed at the least work factor (as `addUser`'s are),
    /// unless the test asks for another.
    private var fastPasswords: [String] {
        extraArguments.contains("--password-iterations") ? [] : ["--password-iterations", "1000"]
    }

    /// Starts the server (again, after a stop, on the same port) and waits until it listens.
    func start() throws {
        let portFile = logPath + ".port"
        try? FileManager.default.removeItem(atPath: portFile)
        let process = try PlistSyncBinary.launch(
            ["serve", "--listen", "127.0.0.1:\(port)", "--data", dataPath, "--port-file", portFile] + fastPasswords + extraArguments, log: logPath)
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let bound = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                port = bound
                if let text = try? String(contentsOfFile: portFile + ".http", encoding: .utf8) {
                    httpPort = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                }
                return
            }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        throw NSError(domain: "TestServer", code: 1, userInfo: [NSLocalizedDescriptionKey: "server did not start: \(self.log())"])
    }

    func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Sends the server process a signal (SIGSTOP and SIGCONT freeze and thaw it).
    func signal(_ number: Int32) {
        if let pid = process?.processIdentifier { kill(pid, number) }
    }

    /// Sends `signal` and waits for the process; returns its exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        guard let process, process.isRunning else { return process?.terminationStatus ?? 0 }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        self.process = nil
        return process.terminationStatus
    }

    var isRunning: Bool { process?.isRunning ?? false }

    var pid: Int32 { process?.processIdentifier ?? 0 }

    /// The server's resident memory in KiB, from /proc.
    func residentKilobytes() -> Int { statusKilobytes("VmRSS:") }

    /// The most resident memory the server has had so far, in KiB.
    func peakResidentKilobytes() -> Int { statusKilobytes("VmHWM:") }

    private func statusKilobytes(_ field: String) -> Int {
        guard let pid = process?.processIdentifier,
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }

    deinit {
        stop(signal: SIGKILL)
        // PLISTSYNC_KEEP_TEST_FILES=1 leaves the folders and logs for a look after a failure.
        guard ProcessInfo.processInfo.environment["PLISTSYNC_KEEP_TEST_FILES"] == nil else { return }
        try? FileManager.default.removeItem(atPath: dataPath)
        try? FileManager.default.removeItem(atPath: logPath)
        try? FileManager.default.removeItem(atPath: logPath + ".port")
        try? FileManager.default.removeItem(atPath: logPath + ".port.http")
    }
}

/// A server a test reaches over TCP on 127.0.0.1: a `plistsync serve` process (`TestServer`)
/// or one running inside the test (`LiveServer`).
protocol ListeningServer: AnyObject {
    var port: Int { get }
    var httpPort: Int { get }
    var dataPath: String { get }
    /// Where `plistsync user` finds this server's accounts.
    var storeArguments: [String] { get }
    func log() -> String
}

extension ListeningServer {
    /// Adds an account with a low KDF work factor, so tests stay fast, through `plistsync user
    /// add` (a running server is told and has applied it when this returns).
    func addUser(_ name: String, password: String, admin: Bool = false) throws {
        let (status, _, err) = PlistSyncCommand.run(
            ["user", "add", name, "--password-stdin", "--iterations", "1000"] + storeArguments + (admin ? ["--admin"] : []),
            input: password + "\n")
        XCTAssertEqual(status, 0, err)
    }

    /// A connection from another loopback address (127.0.0.2, …), as a second machine would be.
    func connect(from source: String) throws -> LineClient {
        try LineClient(port: port, source: source)
    }

    func connect() throws -> LineClient {
        try LineClient(port: port)
    }

    /// A connection that has said HELLO and logged in.
    func login(_ user: String, _ password: String) throws -> LineClient {
        let client = try connect()
        try client.expect("h HELLO 1", prefix: "h OK HELLO 1 ")
        try client.expect("a AUTH \(user) \(password)", equals: "a OK AUTH \(user)")
        return client
    }
}

/// A blocking line client over a real TCP socket, with a read timeout.
/// Unchecked: a test may send from one thread while it reads on another (send and recv on one
/// socket are safe together; the read buffer is touched by the reader only).
final class LineClient: @unchecked Sendable {
    private let socket: Int32
    var fileDescriptor: Int32 { socket }
    private var buffer: [UInt8] = []
    private var bufferStart = 0
    private var scanned = 0
    var timeoutSeconds = 10.0

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `receiveBufferBytes`: a small one makes a client that never reads fill the server's
    /// side sooner.
    init(port: Int, source: String? = nil, receiveBufferBytes: Int32? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBufferBytes {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(socket)
                throw Failure(description: "bind to \(source) failed: errno \(errno)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(socket)
            throw Failure(description: "connect to port \(port) failed: errno \(errno)")
        }
    }

    deinit { close(socket) }

    /// Sends raw bytes.
    func send(bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Sends as much of `bytes` as the socket takes within `seconds` without blocking; returns
    /// how many went out (a client that writes and never reads).
    func sendWithoutBlocking(_ bytes: [UInt8], seconds: Double) -> Int {
        var offset = 0
        let deadline = Date().addingTimeInterval(seconds)
        while offset < bytes.count, Date() < deadline {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent > 0 {
                offset += sent
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                var poller = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, 50)
            } else {
                break
            }
        }
        return offset
    }

    /// Closes with a reset (SO_LINGER 0), the way a crashed or killed client vanishes.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Half-closes (FIN): the client sends nothing more but still reads.
    func halfClose() {
        shutdown(socket, Int32(SHUT_WR))
    }

    /// Sends one line, adding the LF.
    func send(_ line: String) throws {
        try send(bytes: Array((line + "\n").utf8))
    }

    /// The next line without its LF; nil when the server closed the connection.
    func readLine(timeout: Double? = nil) throws -> String? {
        let deadline = Date().addingTimeInterval(timeout ?? timeoutSeconds)
        while true {
            if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[bufferStart..<newline], as: UTF8.self)
                bufferStart = newline + 1
                scanned = bufferStart
                if bufferStart > 1 << 20 || bufferStart == buffer.count {
                    buffer.removeFirst(bufferStart)
                    bufferStart = 0
                    scanned = 0
                }
                return line
            }
            scanned = buffer.count
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "timed out waiting for a line; have \(String(decoding: buffer[bufferStart...].prefix(300), as: UTF8.self))") }
            if !receive(within: remaining) {
                if bufferStart == buffer.count { return nil }
                let line = String(decoding: buffer[bufferStart...], as: UTF8.self)
                buffer.removeAll()
                bufferStart = 0
                scanned = 0
                return line
            }
        }
    }

    /// Waits up to `seconds` for bytes and keeps what comes; false when the server closed.
    private func receive(within seconds: TimeInterval) -> Bool {
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(seconds * 1000) + 1) > 0 else { return true }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(socket, &chunk, chunk.count, 0)
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// The next `count` bytes; fewer when the server closed the connection first.
    func readBytes(_ count: Int, timeout: Double? = nil) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout ?? timeoutSeconds)
        while buffer.count - bufferStart < count {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "timed out waiting for \(count) bytes; have \(buffer.count - bufferStart)") }
            if !receive(within: remaining) { break }
        }
        let end = min(buffer.count, bufferStart + count)
        let bytes = Array(buffer[bufferStart..<end])
        bufferStart = end
        scanned = bufferStart
        return bytes
    }

    /// The one-line reply to `request`, or "" when there is none (for polling).
    func ask(_ request: String) -> String {
        guard (try? send(request)) != nil else { return "" }
        return (try? self.line()) ?? ""
    }


    /// How many records of `collection` are tombstones: a full replay (`SUB … SINCE 0`, then
    /// `UNSUB`) counted on this logged-in connection.
    func tombstones(in collection: String) throws -> Int {
        try send("tomb SUB \(collection) SINCE 0")
        var count = 0
        while true {
            let line = try self.line()
            if line.hasPrefix("tomb OK SUB") { break }
            if line.hasPrefix("tomb ERR") { throw Failure(description: line) }
            if line.hasSuffix(" - DELETED") { count += 1 }
        }
        try expect("untomb UNSUB \(collection)", equals: "untomb OK UNSUB \(collection)")
        return count
    }

    /// Whether the server has closed the connection (reads and drops lines until it does).
    func closedByServer(within seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            do {
                if try readLine(timeout: deadline.timeIntervalSinceNow) == nil { return true }
            } catch {
                return false
            }
        }
        return false
    }
}
