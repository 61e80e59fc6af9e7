import AgentKit
import EventLoop
import Foundation
import TLSKit
import LoadGenerator

/// `plistsync bench`: the load generator's scenarios against PlistSync (a throwaway server
/// unless --server) or, with --peer, against Redis, PostgreSQL, etcd, NATS or Syncthing.
enum BenchCommand: Subcommand {
    static let help = """
        OVERVIEW: Measure a PlistSync server (a release build gives meaningful figures), or a
        peer with the same client code and shape.

        USAGE: plistsync bench put [--clients N] [--seconds S] [--window W]
               plistsync bench fanout [--subscribers M] [--messages K] [--rate R] [--processes P]
               plistsync bench propagate [--trials N] [--burst N] [--initial N]
               plistsync bench propagate --file-kind array|archive [--elements N] [--trials N]
               plistsync bench connections [--count K]
               plistsync bench http [--clients N] [--seconds S]
               plistsync bench sse [--subscribers M] [--messages K] [--rate R] [--count K]
               plistsync bench scale [--sizes 10000,100000,1000000] [--moves N] [--users 1000,10000]
                                     [--collections N] [--agent-sizes 10000,100000] [--server-args "ARGS"]
               plistsync bench reads [--records N] [--edits K]
               plistsync bench accounts [--count N] [--processes P] [--window W] [--grants-only]
               plistsync bench put|fanout --peer redis|nats|postgres|etcd --server HOST:PORT ...
               plistsync bench propagate --peer syncthing --folders A,B [--rescan HOST:PORT --api-key KEY]

        OPTIONS:
          --clients N        (put) Connections, each pipelining (default 16); (http)
                             connections, one request in flight on each (default 16).
          --seconds S        (put, http) Measuring time (default 5; http: each of 4 runs).
          --window W         (put) PUTs in flight per connection (default 16); (accounts) requests
                             in flight (default 1024).
          --subscribers M    (fanout) Subscribed connections (default 100).
          --messages K       (fanout) Changes written (default 2000).
          --rate R           (fanout) Changes per second; 0 = as fast as possible (default 1000).
          --processes P      (fanout) Client processes sharing the subscribers (default 1).
          --trials N         (propagate) Saves in A timed until identical in B (default 30).
          --burst N          (propagate) Files written at once in A (default 1000).
          --initial N        (propagate) Records an empty folder's first sync pulls (default 10000).
          --file-kind K      (propagate) Time an attached app file instead: array or archive.
          --elements N       (propagate --file-kind) Elements in that file (default 1000).
          --count K          (connections) Idle subscribed connections (default 10000);
                             (sse) idle event streams (default 1000); (accounts) accounts
                             added, then granted a role, over one admin connection (default 10000).
          --processes P      (accounts) `plistsync user add` processes timed beside it (default 200).
          --grants-only      (accounts) Only GRANTs, on accounts made beforehand: an older
                             --binary (which has no USER verbs) measured the same way.
          --sizes A,B,…      (scale) Records in the collection measured, one server each.
          --moves N          (scale) MOVEs into one crowded gap at each size (default 500).
          --users A,B,…      (scale) Accounts sharing --collections N (default 10000) with 12
                             members each, measured during 200 user adds.
          --agent-sizes A,…  (scale) Records an agent mirrors: first sync, save -> CHANGE.
          --server-args ARGS (scale) More options for the throwaway servers' serve.
          --records N        (reads) Records in the collection read (default 1000000).
          --edits K          (reads) Times each record is written again first (default 0).
          --binary PATH      The plistsync the throwaway servers and agents run (default this
                             one): an older build measured by this one's clients.
          --peer NAME        Measure that peer instead: redis, postgres, etcd (put, fanout), nats
                             (fanout) at --server; syncthing (propagate) between --folders A,B.
          --rescan HOST:PORT (propagate --peer syncthing) Ask A's Syncthing (REST API, --api-key
                             KEY, --folder-id ID, default plists) to rescan each saved file.
          --record FILE      Append the figures to FILE as tab-separated lines.
          --server HOST:PORT Use a running server instead of starting one (put, fanout).
                             HOST:PORT,HOST:PORT,… names nodes sharing one store: put spreads
                             its clients over them; fanout writes to the first and subscribes
                             on the others (every delivery crosses nodes).
          --tls              (put, fanout, connections) Over TLS: the throwaway server gets a
                             self-signed certificate, pinned by the clients; with --server, the
                             system CAs, or --fingerprint SHA256 / --ca FILE.
          --user NAME        Account on --server (default bench).
          --password P       Its password (default bench).
          -h, --help         Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(
            arguments,
            valueOptions: ["clients", "seconds", "file-kind", "elements", "window", "subscribers", "messages", "rate", "server", "user", "password", "peer", "record",
                           "trials", "burst", "initial", "count", "processes", "since", "folders", "rescan", "api-key", "folder-id",
                           "fingerprint", "ca", "sizes", "moves", "users", "collections", "agent-sizes", "server-args", "binary", "data", "records", "edits"],
            flagOptions: ["tls", "grants-only"])
        guard options.positionals.count == 1, let scenario = options.positionals.first else {
            throw UsageError("name one scenario: put, fanout, propagate, connections, http, sse, scale or accounts")
        }
        if let binary = options.value("binary") {
            guard FileManager.default.isExecutableFile(atPath: binary) else { throw UsageError("--binary \(binary) is not an executable") }
            BenchChildren.executable = URL(fileURLWithPath: binary)
        }
        if scenario == "scale" { return try scale(options) }
        if scenario == "reads" { return try reads(options) }
        if scenario == "accounts" { return try accounts(options) }
        if scenario == "scale-prepare" { return try scalePrepare(options) }
        if let peerName = options.value("peer") {
            if peerName == "syncthing" {
                guard scenario == "propagate" else { throw UsageError("--peer syncthing works with propagate") }
                return try propagateSyncthing(options)
            }
            guard let peer = PeerDialect(rawValue: peerName) else { throw UsageError("--peer is redis, nats, postgres, etcd or syncthing") }
            guard let server = options.value("server"), let address = SocketAddress(parsing: server) else {
                throw UsageError("--peer needs --server HOST:PORT of that peer")
            }
            guard scenario == "put" || scenario == "fanout" else { throw UsageError("--peer \(peerName) works with put and fanout") }
            guard scenario == "fanout" || peer != .nats else { throw UsageError("put needs a durable peer: redis, postgres or etcd") }
            try measure(scenario, on: .peer(peer, address), options)
            return
        }
        let throwaway: ThrowawayServer?
        var target: BenchTarget
        if let server = options.value("server") {
            let nodes = server.split(separator: ",").map { SocketAddress(parsing: String($0)) }
            guard let address = nodes.first ?? nil, !nodes.contains(where: { $0 == nil }) else {
                throw UsageError("--server must be HOST:PORT, or HOST:PORT,HOST:PORT,… for servers sharing one store")
            }
            throwaway = nil
            target = BenchTarget(address: address, user: options.value("user") ?? "bench", password: options.value("password") ?? "bench")
            target.otherNodes = nodes.dropFirst().compactMap { $0 }
            let trust: TLSContext.Trust? = options.value("fingerprint").map { .fingerprint($0) } ?? options.value("ca").map { .authority($0) }
                ?? (options.flag("tls") ? .systemCAs : nil)
            target.tls = try trust.map { try TLSContext.client(trusting: $0) }
        } else {
            let started = try ThrowawayServer(tls: options.flag("tls"))
            throwaway = started
            target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: started.port), user: "bench", password: "bench")
            if let fingerprint = started.fingerprint { target.tls = try TLSContext.client(trusting: .fingerprint(fingerprint)) }
        }
        defer { throwaway?.stop() }

        switch scenario {
        case "fanout-subscribers":
            try runSubscriberHelper(target, options)
        case "put", "fanout":
            let ticks = throwaway.map { ProcessStats.cpuTicks($0.pid) }
            let (operations, shape) = try measure(scenario, on: .plistsync(target), options)
            if let throwaway, let ticks, operations > 0 {
                // The server's own share of the machine: on one box the clients' CPU (and, with
                // --tls, their decryption) competes with it, so this is the figure to compare.
                let seconds = Double(ProcessStats.cpuTicks(throwaway.pid) - ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
                let micros = seconds * 1e6 / Double(operations)
                Console.out(String(format: "server CPU %.2f s: %.2f µs per %@", seconds, micros, scenario == "put" ? "acknowledged change" : "delivered change"))
                try record([("\(shape) server CPU per op", micros, "µs")], of: "plistsync", options)
            }
        case "connections":
            guard let throwaway else { throw UsageError("connections starts its own server to read its memory; leave out --server") }
            let count = try options.integer("count", default: 10_000, range: 1...1_000_000)
            OpenFileLimit.raiseToMaximum()
            let before = throwaway.residentKiB()
            var after = 0
            let result = try ConnectionsScenario(count: count).run(against: target) { after = throwaway.residentKiB() }
            let perConnection = Double(after - before) / Double(max(1, result.connections))
            Console.out(String(format: "connections: %d idle subscribed connections in %.1f s; server RSS %.1f MiB -> %.1f MiB, %.1f KiB per connection; one change reached %d of them",
                         result.connections, result.setupSeconds, Double(before) / 1024, Double(after) / 1024, perConnection, result.delivered))
            try record([("idle connection RSS", perConnection, "KiB")], of: "plistsync", options)
        case "http", "sse":
            guard let throwaway else { throw UsageError("\(scenario) starts its own server (with its HTTP API); leave out --server") }
            let httpAddress = SocketAddress(host: "127.0.0.1", port: throwaway.httpPort)
            if scenario == "http" { try compareRequests(target, httpAddress, options) } else { try compareFanout(throwaway, target, httpAddress, options) }
        case "propagate":
            guard let throwaway else { throw UsageError("propagate starts its own server and agents; leave out --server") }
            try propagate(throwaway, target, options)
        default:
            throw UsageError("unknown scenario '\(scenario)': put, fanout, propagate, connections, http, sse or scale")
        }
    }
}

/// What a put or fan-out measurement runs against.
enum BenchSystem {
    case plistsync(BenchTarget)
    case peer(PeerDialect, SocketAddress)

    var name: String {
        switch self {
        case .plistsync: "plistsync"
        case .peer(let dialect, _): dialect.rawValue
        }
    }
}

extension BenchCommand {
    /// Runs the put or fan-out shape against PlistSync or a peer, prints the figures, and
    /// appends them to --record FILE as tab-separated `scenario system value unit` lines;
    /// returns the operations counted and the shape's name (the server's CPU is recorded by it).
    @discardableResult
    static func measure(_ scenario: String, on system: BenchSystem, _ options: Arguments) throws -> (operations: Int, shape: String) {
        var figures: [(name: String, value: Double, unit: String)] = []
        let line: String
        let operations: Int
        let shape: String
        if scenario == "put" {
            let clients = try options.integer("clients", default: 16, range: 1...10_000)
            let seconds = Double(try options.integer("seconds", default: 5, range: 1...3600))
            let window = try options.integer("window", default: 16, range: 1...4096)
            let result: PutScenario.Result
            switch system {
            case .plistsync(let target):
                guard let measured = PutScenario(clients: clients, seconds: seconds, window: window).run(against: target) else {
                    throw RuntimeError("the benchmark could not connect or log in to \(target.address)")
                }
                result = measured
            case .peer(let dialect, let address):
                result = try PeerScenarios.put(dialect, at: address, clients: clients, window: window, seconds: seconds)
            }
            shape = "put c\(clients) w\(window)"
            figures = [(shape, result.perSecond, "acks/s"), (shape + " p99", result.latency.p99Milliseconds, "ms")]
            line = String(format: "%@ put clients=%d window=%d: %.0f acknowledged changes/s, ack latency %@ (%d acks in %.2f s, %d errors)",
                          system.name, clients, window, result.perSecond, result.latency.text, result.acknowledged, result.seconds, result.errors)
            operations = result.acknowledged
        } else {
            let subscribers = try options.integer("subscribers", default: 100, range: 1...100_000)
            let messages = try options.integer("messages", default: 2000, range: 1...10_000_000)
            let rate = try options.integer("rate", default: 1000, range: 0...10_000_000)
            let result: FanoutScenario.Result
            switch system {
            case .plistsync(let target):
                let processes = try options.integer("processes", default: 1, range: 1...64)
                // This process keeps the first share; each helper process takes one of the others.
                let shares = (0..<processes).map { subscribers / processes + ($0 < subscribers % processes ? 1 : 0) }
                let helpers = processes > 1 ? SubscriberProcesses(target: target, shares: Array(shares.dropFirst()), messages: messages) : nil
                let scenario = FanoutScenario(subscribers: shares[0], messages: messages, rate: rate)
                guard let measured = try scenario.run(against: target, helpers: helpers) else {
                    throw RuntimeError("the benchmark could not connect, log in, or was disconnected by \(target.address)")
                }
                result = measured
            case .peer(let dialect, let address):
                result = try PeerScenarios.fanout(dialect, at: address, subscribers: subscribers, messages: messages, rate: rate)
            }
            shape = "fanout s\(subscribers) " + (rate == 0 ? "blast" : "\(rate)/s")
            figures = rate == 0
                ? [(shape, result.deliveredPerSecond, "delivered/s")]
                : [(shape + " p50", result.latency.p50Milliseconds, "ms"), (shape + " p99", result.latency.p99Milliseconds, "ms")]
            line = String(format: "%@ fanout subscribers=%d rate=%@: %.0f delivered changes/s, write->delivery %@ (%d of %d delivered in %.2f s)",
                          system.name, subscribers, rate == 0 ? "blast" : "\(rate)/s", result.deliveredPerSecond, result.latency.text,
                          result.delivered, result.expected, result.seconds)
                + (result.afterAcknowledgement.map { ", writer's ack->delivery \($0.text)" } ?? "")
            if rate > 0, let after = result.afterAcknowledgement {
                figures += [(shape + " ack->delivery p50", after.p50Milliseconds, "ms"), (shape + " ack->delivery p99", after.p99Milliseconds, "ms")]
            }
            operations = result.delivered
        }
        Console.out(line)
        try record(figures, of: system.name, options)
        return (operations, shape)
    }

    /// Appends figures to --record FILE as tab-separated `scenario system value unit` lines.
    static func record(_ figures: [(name: String, value: Double, unit: String)], of system: String, _ options: Arguments) throws {
        guard let path = options.value("record") else { return }
        let text = figures.map { "\($0.name)\t\(system)\t\(String(format: "%.3f", $0.value))\t\($0.unit)\n" }.joined()
        guard let handle = FileHandle(forWritingAtPath: path) ?? {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            return FileHandle(forWritingAtPath: path)
        }() else { throw RuntimeError("cannot write \(path)") }
        handle.seekToEndOfFile()
        handle.write(Data(text.utf8))
        try? handle.close()
    }

    /// `propagate --file-kind array|archive`: an attached whole-list file, saved in A with one
    /// element changed, until B's file holds the change.
    static func propagateFile(_ server: ThrowawayServer, _ kindName: String, _ options: Arguments) throws {
        guard let kind = FilePropagateScenario.Kind(rawValue: kindName) else { throw UsageError("--file-kind must be array or archive") }
        let trials = try options.integer("trials", default: 30, range: 2...100_000)
        let elements = try options.integer("elements", default: 1000, range: 1...1_000_000)
        let name = kind == .array ? "list.plist" : "list.archive"
        let file = AttachedFile(name: name, collection: "bench_file_\(kindName)", idKey: "id")
        let agentA = try AgentProcess(server: server, name: "a", attaching: file)
        let agentB = try AgentProcess(server: server, name: "b", attaching: file)
        defer {
            agentA.stop()
            agentB.stop()
        }
        let result = try FilePropagateScenario(folderA: agentA.folder, folderB: agentB.folder, fileName: name, kind: kind,
                                               elements: elements, trials: trials).run()
        Console.out(String(format: "plistsync propagate %@ file of %d elements, one element changed in A -> in B's file, %d trials: %@ (first sync of the file %.0f ms)",
                     kindName, elements, result.trials, result.latency.text, result.initialMilliseconds))
        try record([("file \(kindName) \(elements) p50", result.latency.p50Milliseconds, "ms"), ("file \(kindName) \(elements) p99", result.latency.p99Milliseconds, "ms")],
                   of: "plistsync", options)
    }

    /// `propagate --peer syncthing`: the same trials between two folders Syncthing keeps in
    /// sync, optionally asking it to rescan each saved file at once (its floor).
    static func propagateSyncthing(_ options: Arguments) throws {
        let folders = (options.value("folders") ?? "").split(separator: ",").map(String.init)
        guard folders.count == 2 else { throw UsageError("--peer syncthing needs --folders A,B (two shared folders)") }
        var scenario = PropagateScenario(
            folderA: folders[0], folderB: folders[1], trials: try options.integer("trials", default: 30, range: 2...100_000),
            burst: try options.integer("burst", default: 1000, range: 1...1_000_000))
        // Its own collection folder per run, so files of an earlier run are not already there.
        scenario.collection = "bench_propagate_\(UInt64(Date().timeIntervalSince1970 * 1000))"
        // As in ../shared/bench/peers/syncthing: fsWatcherDelayS + 1 s between trials.
        scenario.pauseMilliseconds = 2000
        var system = "syncthing"
        if let rest = options.value("rescan") {
            guard let address = SocketAddress(parsing: rest), let key = options.value("api-key") else {
                throw UsageError("--rescan HOST:PORT needs --api-key KEY of that Syncthing")
            }
            scenario.rescan = SyncthingRescan(address: address, apiKey: key, folderID: options.value("folder-id") ?? "plists")
            system = "syncthing-scan"
        }
        try report(try scenario.run(timeoutSeconds: 60), of: system, options)
    }

    static func report(_ result: PropagateScenario.Result, of system: String, _ options: Arguments) throws {
        Console.out(String(format: "%@ propagate save in A -> identical in B, %d trials: %@, p90 %.3f ms", system, result.trials, result.latency.text, result.p90Milliseconds))
        Console.out(String(format: "%@ propagate burst of %d files: all identical in B %.1f ms after the first write", system, result.burstFiles, result.burstMilliseconds))
        try record([("propagate p50", result.latency.p50Milliseconds, "ms"), ("propagate p90", result.p90Milliseconds, "ms"),
                    ("propagate burst \(result.burstFiles)", result.burstMilliseconds, "ms")], of: system, options)
    }

    /// The child side of `fanout --processes`: subscribes, says `ready`, reports when done.
    static func runSubscriberHelper(_ target: BenchTarget, _ options: Arguments) throws {
        guard options.value("server") != nil, let since = options.value("since") else {
            throw UsageError("fanout-subscribers is started by fanout --processes with --server and --since")
        }
        let helper = FanoutSubscribers(
            subscribers: try options.integer("subscribers", default: 100, range: 1...100_000),
            messages: try options.integer("messages", default: 2000, range: 1...10_000_000), since: since)
        let report = helper.run(against: target) {
            Console.write(Array("ready\n".utf8))
        }
        Console.write(Array(((report?.line ?? "failed") + "\n").utf8))
    }

    /// Two real agents on one throwaway server: per-save latency, a burst, an initial sync.
    static func propagate(_ server: ThrowawayServer, _ target: BenchTarget, _ options: Arguments) throws {
        if let kindName = options.value("file-kind") { return try propagateFile(server, kindName, options) }
        let trials = try options.integer("trials", default: 30, range: 2...100_000)
        let burst = try options.integer("burst", default: 1000, range: 1...1_000_000)
        let initial = try options.integer("initial", default: 10_000, range: 0...10_000_000)
        let agentA = try AgentProcess(server: server, name: "a")
        let agentB = try AgentProcess(server: server, name: "b")
        defer {
            agentA.stop()
            agentB.stop()
        }
        try report(try PropagateScenario(folderA: agentA.folder, folderB: agentB.folder, trials: trials, burst: burst).run(), of: "plistsync", options)
        // B holds every record of the run now; let it settle, then watch it idle.
        sleep(1)
        let ticksBefore = ProcessStats.cpuTicks(agentB.pid)
        sleep(5)
        let idleTicks = ProcessStats.cpuTicks(agentB.pid) - ticksBefore
        let resident = Double(ProcessStats.residentKiB(agentB.pid)) / 1024
        Console.out(String(format: "plistsync agent idle with %d records: %d CPU ticks in 5 s, RSS %.1f MiB", trials / 2 + burst, idleTicks, resident))
        try record([("agent idle RSS", resident, "MiB"), ("agent idle CPU ticks in 5 s", Double(idleTicks), "ticks")], of: "plistsync", options)
        guard initial > 0 else { return }
        try Populate.run(against: target, collection: "bench_initial", count: initial)
        let started = Date()
        let agentC = try AgentProcess(server: server, name: "c")
        defer { agentC.stop() }
        let folder = agentC.folder + "/bench_initial"
        while (try? FileManager.default.contentsOfDirectory(atPath: folder).count(where: { $0.hasSuffix(".plist") })) != initial {
            guard Date().timeIntervalSince(started) < 300 else { throw RuntimeError("the initial sync did not finish in 300 s") }
            usleep(20_000)
        }
        let seconds = Date().timeIntervalSince(started)
        Console.out(String(format: "plistsync propagate initial sync of %d records into an empty folder: %.2f s (agent start included)", initial, seconds))
        try record([("initial sync \(initial)", seconds * 1000, "ms")], of: "plistsync", options)
    }
}
