import EventLoop
import Foundation
import LoadGenerator
import ServerKit
import SQLiteStore
import SyncCore

/// `bench scale`: one node's envelope as its collections, accounts and mirrored folders grow
/// by 10× at a time, each size on a throwaway server of its own (`--binary` runs an older
/// build's server and agents for a before/after in one run).
extension BenchCommand {
    static func scale(_ options: Arguments) throws {
        func sizes(_ name: String, _ fallback: [Int]) throws -> [Int] {
            guard let text = options.value(name) else { return fallback }
            if text == "none" { return [] }
            let values = text.split(separator: ",").compactMap { Int($0) }
            guard values.count == text.split(separator: ",").count, values.allSatisfy({ $0 >= 10 }) else {
                throw UsageError("--\(name) takes counts of at least 10, comma-separated, or none")
            }
            return values
        }
        let arguments = options.value("server-args").map { $0.split(separator: " ").map(String.init) } ?? []
        let moves = try options.integer("moves", default: 500, range: 2...1_000_000)
        for size in try sizes("sizes", [10_000, 100_000, 1_000_000]) { try scaleRecords(size, moves: moves, arguments, options) }
        let collections = try options.integer("collections", default: 10_000, range: 1...1_000_000)
        for users in try sizes("users", [1_000, 10_000]) { try scaleAccounts(users: users, collections: collections, arguments, options) }
        for size in try sizes("agent-sizes", [10_000, 100_000]) { try scaleAgent(size, arguments, options) }
    }

    /// A collection of `size` records: loading, random updates, reading it whole four at a
    /// time (memory), and moves into one crowded gap (stalls, changes per move, subscribers).
    private static func scaleRecords(_ size: Int, moves: Int, _ arguments: [String], _ options: Arguments) throws {
        let server = try ThrowawayServer(arguments: arguments)
        defer { server.stop() }
        let target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: server.port), user: "bench", password: "bench")
        let collection = "scale"
        let loadStart = Date()
        try Populate.run(against: target, collection: collection, count: size)
        let loadSeconds = Date().timeIntervalSince(loadStart)

        var updates = PutScenario(clients: 16, seconds: 5, window: 16)
        updates.collection = collection
        updates.existingRecords = size
        let writtenBefore = ProcessStats.writtenBytes(server.pid)
        guard let updated = updates.run(against: target) else { throw RuntimeError("the updates could not connect") }
        // What the server writes once the updates end counts too: rows written behind their
        // logged changes, checkpoints.
        let writtenPerUpdate = Double(ProcessStats.writtenBytesOnceQuiet(server.pid) - writtenBefore) / Double(max(1, updated.acknowledged))

        var reads: [String] = []
        var figures: [(name: String, value: Double, unit: String)] = [
            ("scale \(size) load", Double(size) / loadSeconds, "records/s"), ("scale \(size) random updates", updated.perSecond, "acks/s"),
            ("scale \(size) bytes written per update", writtenPerUpdate, "B"),
        ]
        for read in [ReadAllScenario.Read.replay, .list] {
            let idle = server.residentKiB()
            var peak = idle
            let result = try ReadAllScenario(collection: collection, clients: 4, read: read).run(against: target) {
                peak = max(peak, server.residentKiB())
            }
            let grew = Double(peak - idle) / 1024
            reads.append(String(format: "4 clients %@ %.1f s, RSS +%.0f MiB over %.0f MiB idle", read == .list ? "LIST" : "replay", result.seconds, grew, Double(idle) / 1024))
            figures.append(("scale \(size) 4x \(read.rawValue) RSS growth", grew, "MiB"))
        }
        let after = server.residentKiB()

        let gap = try GapMoveScenario(collection: collection, moving: ["r\(size - 1)", "r\(size - 2)"], anchor: "r\(size - 3)", moves: moves)
            .run(against: target)
        figures += [("scale \(size) move p99", gap.latency.p99Milliseconds, "ms"), ("scale \(size) move max", gap.latency.maxMilliseconds, "ms"),
                    ("scale \(size) changes per move", gap.changesPerMove, "changes")]
        Console.out(String(format: "scale %d records: loaded %.0f/s; random updates %.0f acks/s (p99 %.2f ms, %.1f KiB written to storage each); %@; RSS after %.0f MiB",
                     size, Double(size) / loadSeconds, updated.perSecond, updated.latency.p99Milliseconds, writtenPerUpdate / 1024,
                     reads.joined(separator: "; "), Double(after) / 1024))
        Console.out(String(format: "scale %d records: %d MOVEs into one gap: %@, %.2f CHANGEs per move at the subscriber, subscriber %@",
                     size, moves, gap.latency.text, gap.changesPerMove, gap.subscriberCutOff.map { "cut off (BYE \($0))" } ?? "still connected"))
        try record(figures, of: "plistsync", options)
    }

    /// `bench reads`: 8 clients read one collection of `--records` (default 1,000,000) whole at
    /// once, 4 by LIST and 4 by SUB SINCE 0, while a ninth sends a PING every 2 ms: the bytes
    /// served a second of the server's CPU, and how long the PINGs waited behind the reads.
    /// `--edits K` writes every record K more times first (a collection with a history to skip).
    static func reads(_ options: Arguments) throws {
        let size = try options.integer("records", default: 1_000_000, range: 10...100_000_000)
        let edits = try options.integer("edits", default: 0, range: 0...1_000)
        let arguments = options.value("server-args").map { $0.split(separator: " ").map(String.init) } ?? []
        let server = try ThrowawayServer(arguments: arguments)
        defer { server.stop() }
        let target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: server.port), user: "bench", password: "bench")
        try Populate.run(against: target, collection: "reads", count: size, edits: edits)
        let probe = PingProbe()
        probe.start(against: target)
        usleep(200_000)
        let ticks = ProcessStats.cpuTicks(server.pid)
        let result = try ReadAllScenario(collection: "reads", reads: Array(repeating: .list, count: 4) + Array(repeating: .replay, count: 4))
            .run(against: target) {}
        let cpuSeconds = Double(ProcessStats.cpuTicks(server.pid) - ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        guard let pings = probe.stop() else { throw RuntimeError("the PING client could not log in") }
        let megabytes = Double(result.bytes) / 1e6
        guard result.records.allSatisfy({ $0 == size }) else { throw RuntimeError("a reader got \(result.records) records of \(size)") }
        Console.out(String(format: "reads: 4 LIST + 4 SUB SINCE 0 of %d records at once: %.0f MB in %.1f s; server %.1f CPU-s (%.0f MB/s a core); PING meanwhile %@",
                           size, megabytes, result.seconds, cpuSeconds, megabytes / max(cpuSeconds, 0.01), pings.text))
        try record([("reads \(size) served per CPU-second", megabytes / max(cpuSeconds, 0.01), "MB/s"), ("reads \(size) PING p99", pings.p99Milliseconds, "ms"),
                    ("reads \(size) PING max", pings.maxMilliseconds, "ms")], of: "plistsync", options)
    }

    /// `collections` collections with 12 members each among `users` accounts, then 200 account
    /// changes back to back (`user add`, each waiting until the server applied it) while a
    /// client PINGs.
    private static func scaleAccounts(users: Int, collections: Int, _ arguments: [String], _ options: Arguments) throws {
        let hash = PasswordHasher.hash("bench", iterations: PasswordHasher.minimumIterations)
        let server = try ThrowawayServer(arguments: arguments) { folder in
            // In a child: opening the store takes the folder's server lock until the process exits.
            let child = Process()
            child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            child.arguments = ["bench", "scale-prepare", "--data", folder, "--users", String(users), "--collections", String(collections)]
            try child.run()
            child.waitUntilExit()
            guard child.terminationStatus == 0 else { throw RuntimeError("preparing \(users) users and \(collections) collections failed") }
        }
        defer { server.stop() }
        let target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: server.port), user: "bench", password: "bench")
        let folder = DataFolder(path: server.folder)
        let book = FolderAccounts(folder: folder, accounts: try Accounts(folder: folder))
        let probe = PingProbe()
        probe.start(against: target)
        usleep(200_000)
        var applied: [Double] = []
        for index in 0..<200 {
            let started = Date()
            _ = try book.addUser("new\(index)", passwordHash: hash, isAdmin: false)
            book.tellRunningServers()
            applied.append(Date().timeIntervalSince(started) * 1000)
        }
        guard let pings = probe.stop() else { throw RuntimeError("the PING client could not log in") }
        applied.sort()
        Console.out(String(format: "scale accounts: %d users, %d collections, %d member rows: 200 user adds applied in p50 %.1f ms, max %.1f ms each; PING meanwhile %@",
                     users, collections, collections * 12, applied[100], applied[199], pings.text))
        try record([("scale accounts u\(users) c\(collections) add applied p50", applied[100], "ms"),
                    ("scale accounts u\(users) c\(collections) PING p99", pings.p99Milliseconds, "ms"),
                    ("scale accounts u\(users) c\(collections) PING max", pings.maxMilliseconds, "ms")], of: "plistsync", options)
    }

    /// The child side of the accounts measurement's setup: `users` accounts and `collections`
    /// collections with 12 members each, written straight into the data folder's store.
    static func scalePrepare(_ options: Arguments) throws {
        guard let path = options.value("data") else { throw UsageError("scale-prepare is run by bench scale with --data") }
        let users = try options.integer("users", default: 1_000, range: 1...10_000_000)
        let collections = try options.integer("collections", default: 10_000, range: 1...10_000_000)
        let hash = PasswordHasher.hash("bench", iterations: PasswordHasher.minimumIterations)
        let folder = DataFolder(path: path)
        let accounts = try Accounts(folder: folder)
        for index in 0..<users { _ = try accounts.addUser("u\(index)", passwordHash: hash, isAdmin: false) }
        let store = try SQLiteServerStore(folder: folder)
        var operations: [StoreOperation] = (0..<collections).map { .createCollection(name: "c\($0)", owner: "bench") }
        for index in 0..<collections {
            for member in 0..<12 { operations.append(.grant(collection: "c\(index)", user: "u\((index * 12 + member) % users)", role: .write)) }
        }
        var start = 0
        while start < operations.count {
            _ = try store.commit(Array(operations[start..<min(start + 5_000, operations.count)]))
            start += 5_000
        }
    }

    /// An agent mirroring a collection of `size` records: its first sync, then single saves
    /// until a subscriber sees each one's CHANGE.
    private static func scaleAgent(_ size: Int, _ arguments: [String], _ options: Arguments) throws {
        let server = try ThrowawayServer(arguments: arguments)
        defer { server.stop() }
        let target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: server.port), user: "bench", password: "bench")
        let collection = "scale_agent"
        try Populate.run(against: target, collection: collection, count: size)
        let started = Date()
        let agent = try AgentProcess(server: server, name: "scale")
        defer { agent.stop() }
        let path = agent.folder + "/" + collection
        while ((try? FileManager.default.contentsOfDirectory(atPath: path))?.count ?? 0) < size {
            guard Date().timeIntervalSince(started) < 600 else { throw RuntimeError("the agent's first sync of \(size) records took over 10 minutes") }
            usleep(200_000)
        }
        let firstSync = Date().timeIntervalSince(started)
        // Settled: the agent has written its state for the last files too.
        sleep(2)
        let edits = AgentEditScenario(folder: agent.folder, collection: collection, records: size, trials: 40)
        let latency = try edits.savesToChanges(against: target)
        let remote = try edits.putsToFiles(against: target)
        Console.out(String(format: "scale agent %d records: first sync %.1f s; a save -> CHANGE at a subscriber %@; a PUT -> the agent's file %@",
                     size, firstSync, latency.text, remote.text))
        try record([("scale agent \(size) first sync", firstSync, "s"), ("scale agent \(size) save->CHANGE p50", latency.p50Milliseconds, "ms"),
                    ("scale agent \(size) save->CHANGE max", latency.maxMilliseconds, "ms"),
                    ("scale agent \(size) PUT->file p50", remote.p50Milliseconds, "ms"), ("scale agent \(size) PUT->file max", remote.maxMilliseconds, "ms")],
                   of: "plistsync", options)
    }
}
