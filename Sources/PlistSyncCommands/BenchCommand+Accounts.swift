import Foundation
import LoadGenerator
import EventLoop
import ServerKit
import SyncProtocol

/// `plistsync bench accounts`: filling a server with accounts and roles over the wire
/// (pipelined USER ADD, then GRANT, on one admin connection) against the way it was done
/// before (a `plistsync user add` process an account), in the same run.
extension BenchCommand {
    static func accounts(_ options: Arguments) throws {
        let count = try options.integer("count", default: 10_000, range: 1...1_000_000)
        if options.flag("grants-only") { return try grantsOnly(count: count, options) }
        let processes = try options.integer("processes", default: 200, range: 0...100_000)
        let window = try options.integer("window", default: 1024, range: 1...1024)
        // Passwords hashed at the least work factor, by the server as by the processes.
        let server = try ThrowawayServer(arguments: ["--password-iterations", String(PasswordHasher.minimumIterations)]) { folder in
            try BenchChildren.addUser("admin", password: "admin", admin: true, folder: folder)
        }
        defer { server.stop() }
        let target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: server.port), user: "admin", password: "admin")
        let scenario = AdministrationScenario(window: window)
        let adds = (0..<count).map { Command.userAdd(name: "u\($0)", password: "pw\($0)", isAdmin: false) }
        guard let added = scenario.run(adds, against: target) else { throw RuntimeError("could not log in to the throwaway server") }
        guard let made = scenario.run([.create(collection: "team")], against: target), made.errors == 0 else { throw RuntimeError("could not make the collection") }
        let grants = (0..<count).map { Command.grant(collection: "team", user: "u\($0)", role: .write) }
        guard let granted = scenario.run(grants, against: target) else { throw RuntimeError("could not log in to the throwaway server") }
        Console.out(String(format: "accounts over the wire: %d USER ADD pipelined on one connection in %.2f s (%.0f/s, %d errors%@)",
                           count, added.seconds, added.perSecond, added.errors, added.firstError.map { ": " + $0 } ?? ""))
        Console.out(String(format: "accounts over the wire: %d GRANT pipelined on one connection in %.2f s (%.0f/s, %d errors%@)",
                           count, granted.seconds, granted.perSecond, granted.errors, granted.firstError.map { ": " + $0 } ?? ""))
        var figures: [(String, Double, String)] = [("accounts USER ADD n\(count)", added.seconds, "s"), ("accounts GRANT n\(count)", granted.seconds, "s")]
        if processes > 0 {
            // The peer: one `plistsync user add` process an account, on the running server's folder.
            let started = Date()
            for index in 0..<processes { try BenchChildren.addUser("p\(index)", password: "pw", admin: false, folder: server.folder) }
            let perAccount = Date().timeIntervalSince(started) / Double(processes)
            Console.out(String(format: "accounts by process: %d `plistsync user add` in %.2f s: %.1f ms an account, %.0f s for %d; over the wire %.1fx faster",
                               processes, perAccount * Double(processes), perAccount * 1000, perAccount * Double(count), count,
                               perAccount * Double(count) / max(added.seconds, 1e-9)))
            figures.append(("accounts user add process", perAccount * 1000, "ms"))
        }
        try record(figures, of: "plistsync", options)
    }

    /// GRANTs alone, pipelined by the owner of a collection on accounts made beforehand in the
    /// data folder (by the binary under test, so `--binary` measures an older server too).
    private static func grantsOnly(count: Int, _ options: Arguments) throws {
        let window = try options.integer("window", default: 1024, range: 1...1024)
        let server = try ThrowawayServer { folder in
            let child = Process()
            child.executableURL = BenchChildren.executable
            child.arguments = ["bench", "scale-prepare", "--data", folder, "--users", String(count), "--collections", "1"]
            child.standardOutput = FileHandle.nullDevice
            try child.run()
            child.waitUntilExit()
            guard child.terminationStatus == 0 else { throw RuntimeError("preparing \(count) accounts failed") }
        }
        defer { server.stop() }
        let target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: server.port), user: "bench", password: "bench")
        let grants = (0..<count).map { Command.grant(collection: "c0", user: "u\($0)", role: .read) }
        guard let granted = AdministrationScenario(window: window).run(grants, against: target) else { throw RuntimeError("could not log in") }
        Console.out(String(format: "grants: %d GRANT pipelined on one connection in %.2f s (%.0f/s, %d errors%@)",
                           count, granted.seconds, granted.perSecond, granted.errors, granted.firstError.map { ": " + $0 } ?? ""))
        try record([("accounts GRANT only n\(count)", granted.seconds, "s")], of: "plistsync", options)
    }
}
