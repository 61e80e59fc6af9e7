import Foundation
import XCTest

/// A real PostgreSQL server for the tests, started once per test run from the Debian package
/// (initdb in a temporary folder, on 127.0.0.1, as the postgres user when the tests run as
/// root: PostgreSQL refuses root) and stopped when the run ends. Each test gets a database of
/// its own.
enum TestPostgres {
    private static let port = 17_900 + Int(getpid() % 90)
    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: Result<String, Error>?
    nonisolated(unsafe) private static var folder = ""
    nonisolated(unsafe) private static var binaries = ""

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// The URL of a new, empty database.
    static func freshDatabase() throws -> String {
        let base = try server()
        let name = "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try run(binaries + "/psql", ["-q", "-h", "127.0.0.1", "-p", String(port), "-U", "plistsync", "-d", "postgres", "-c", "CREATE DATABASE \(name)"])
        return base + name
    }

    /// Runs `sql` on the database at `url` (as the tests' superuser).
    static func execute(_ sql: String, on url: String) throws {
        try run(binaries + "/psql", ["-q", "-d", url, "-c", sql])
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) the whole database server, the postmaster and
    /// every backend: a database that stalls without closing a connection.
    static func freeze(_ frozen: Bool) throws {
        _ = try server()
        let pidText = try String(contentsOfFile: folder + "/postmaster.pid", encoding: .utf8)
        guard let postmaster = pid_t(pidText.split(separator: "\n").first ?? "") else {
            throw Failure(description: "no postmaster pid in \(pidText)")
        }
        var processes = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after the command name: state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { processes.append(pid) }
        }
        for pid in processes { kill(pid, frozen ? SIGSTOP : SIGCONT) }
    }

    private static func server() throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let started { return try started.get() }
        let result = Result { try start() }
        started = result
        return try result.get()
    }

    private static func start() throws -> String {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.sorted(by: { $0.compare($1, options: .numeric) == .orderedAscending }).last else {
            throw Failure(description: "PostgreSQL is not installed (apt-get install postgresql); Deploy/test.sh installs it")
        }
        binaries = "/usr/lib/postgresql/\(version)/bin"
        folder = NSTemporaryDirectory() + "plistsync-pg-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let asRoot = getuid() == 0
        if asRoot { try run("/bin/chown", ["postgres", folder]) }
        try runAsOwner(binaries + "/initdb", ["-D", folder, "-A", "trust", "-U", "plistsync"], asRoot: asRoot)
        try runAsOwner(binaries + "/pg_ctl", [
            "-D", folder, "-l", folder + "/server.log", "-w", "-o",
            "-p \(port) -k \(folder) -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c synchronous_commit=on",
            "start",
        ], asRoot: asRoot)
        atexit {
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: getuid() == 0 ? "/usr/sbin/runuser" : TestPostgres.binaries + "/pg_ctl")
            let arguments = ["-D", TestPostgres.folder, "-m", "immediate", "stop"]
            stop.arguments = getuid() == 0 ? ["-u", "postgres", "--", TestPostgres.binaries + "/pg_ctl"] + arguments : arguments
            stop.standardOutput = FileHandle.nullDevice
            stop.standardError = FileHandle.nullDevice
            try? stop.run()
            stop.waitUntilExit()
            try? FileManager.default.removeItem(atPath: TestPostgres.folder)
        }
        return "postgresql://plistsync@127.0.0.1:\(port)/"
    }

    private static func runAsOwner(_ tool: String, _ arguments: [String], asRoot: Bool) throws {
        if asRoot {
            try run("/usr/sbin/runuser", ["-u", "postgres", "--", tool] + arguments)
        } else {
            try run(tool, arguments)
        }
    }

    /// Runs a tool to its end, its output to a file. Spawned and waited for directly: `pg_ctl
    /// start` leaves the server running with the descriptors the tool inherited, and
    /// Foundation's `Process` would wait until those close (so, forever).
    private static func run(_ tool: String, _ arguments: [String]) throws {
        let outputPath = NSTemporaryDirectory() + "plistsync-pg-tool-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, tool, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(tool): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }
}
