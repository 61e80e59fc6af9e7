import AgentKit
import Foundation
import TLSKit

/// A `plistsync agent` child mirroring a fresh temporary folder as the bench user.
final class AgentProcess {
    let folder: String
    private let process = Process()
    var pid: pid_t { process.processIdentifier }

    /// `attaching`: an app file the agent mirrors as a collection (set up before it starts).
    init(server: ThrowawayServer, name: String, attaching file: AttachedFile? = nil) throws {
        folder = server.folder + "-agent-" + name
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if let file { try AttachedFiles.attach(file, directory: folder) }
        let passwordFile = folder + ".password"
        try "bench\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        process.executableURL = BenchChildren.executable
        process.arguments = ["agent", "--server", "127.0.0.1:\(server.port)", "--user", "bench", "--password-file", passwordFile,
                             "--dir", folder, "--device", name]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        BenchChildren.track(process)
        try process.run()
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
        try? FileManager.default.removeItem(atPath: folder + ".password")
    }
}

/// A `plistsync serve` child on a free loopback port with a temporary data folder and a
/// `bench` account, removed again by `stop()`.
final class ThrowawayServer {
    let port: Int
    /// Its HTTP API's port.
    private(set) var httpPort = 0
    let folder: String
    /// The self-signed certificate's fingerprint when the server speaks TLS.
    private(set) var fingerprint: String?
    private let process = Process()

    /// `prepare` fills the data folder before the server starts; `arguments` go to `serve`.
    init(tls: Bool = false, arguments: [String] = [], prepare: (String) throws -> Void = { _ in }) throws {
        folder = NSTemporaryDirectory() + "plistsync-bench-" + UUID().uuidString
        let executable = BenchChildren.executable
        try BenchChildren.addUser("bench", password: "bench", folder: folder)
        try prepare(folder)
        let portFile = folder + "/port"
        process.executableURL = executable
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data", folder, "--port-file", portFile, "--quiet"]
            + (tls ? ["--tls"] : []) + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        BenchChildren.track(process)
        for _ in 0..<500 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                self.port = port
                httpPort = (try? String(contentsOfFile: portFile + ".http", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
                if tls { fingerprint = Fingerprint.ofCertificate(at: folder + "/tls/cert.pem") }
                return
            }
            usleep(10_000)
        }
        process.terminate()
        throw RuntimeError("the throwaway server did not start")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The server's resident memory in KiB.
    func residentKiB() -> Int { ProcessStats.residentKiB(process.processIdentifier) }

    var pid: pid_t { process.processIdentifier }
}

/// A child process's resident memory and CPU time, from /proc.
enum ProcessStats {
    static func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    /// Bytes the process has caused to be written to storage so far (`write_bytes` of /proc/PID/io).
    static func writtenBytes(_ pid: pid_t) -> Int {
        let io = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
        let line = io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") } ?? ""
        return Int(line.split(separator: " ").last ?? "0") ?? 0
    }

    /// `writtenBytes` once the process has written nothing for `quietSeconds` (at most
    /// `maxSeconds` from now): what work it finishes after the requests end (rows written
    /// behind their logged changes, checkpoints) counts too.
    static func writtenBytesOnceQuiet(_ pid: pid_t, quietSeconds: Double = 1, maxSeconds: Double = 20) -> Int {
        let deadline = Date().addingTimeInterval(maxSeconds)
        var last = writtenBytes(pid)
        var quietSince = Date()
        while Date() < deadline, Date().timeIntervalSince(quietSince) < quietSeconds {
            usleep(100_000)
            let now = writtenBytes(pid)
            if now != last { last = now; quietSince = Date() }
        }
        return last
    }

    /// User + system clock ticks so far (fields 14 and 15 of /proc/PID/stat).
    static func cpuTicks(_ pid: pid_t) -> Int {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }
}

/// The benchmark's child processes, ended when the benchmark is interrupted, so no server or
/// agent outlives a Ctrl-C.
enum BenchChildren {
    /// The `plistsync` the throwaway servers and agents run: this one, or `bench --binary PATH`
    /// (an older build, for a before/after in one run).
    nonisolated(unsafe) static var executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    nonisolated(unsafe) private static var pids: [pid_t] = []

    /// `plistsync user add` in a process of its own (as an admin would type it), at the least
    /// work factor.
    static func addUser(_ name: String, password: String, admin: Bool = false, folder: String) throws {
        let add = Process()
        add.executableURL = executable
        add.arguments = ["user", "add", name, "--password-stdin", "--iterations", "1000", "--data", folder] + (admin ? ["--admin"] : [])
        let input = Pipe()
        add.standardInput = input
        add.standardOutput = FileHandle.nullDevice
        try add.run()
        input.fileHandleForWriting.write(Data("\(password)\n".utf8))
        try input.fileHandleForWriting.close()
        add.waitUntilExit()
        guard add.terminationStatus == 0 else { throw RuntimeError("plistsync user add \(name) failed") }
    }

    static func track(_ process: Process) {
        if pids.isEmpty {
            for signal in [SIGINT, SIGTERM] {
                Glibc.signal(signal) { number in
                    for pid in BenchChildren.pids { kill(pid, SIGTERM) }
                    _exit(128 + number)
                }
            }
        }
        pids.append(process.processIdentifier)
    }
}
