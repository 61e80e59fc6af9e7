import EventLoop
import Foundation
import LoadGenerator

/// `plistsync bench put|fanout`: load against a server; starts a throwaway one unless --server.
enum BenchCommand: Subcommand {
    static let help = """
        OVERVIEW: Measure a PlistSync server (a release build gives meaningful figures).

        USAGE: plistsync bench put [--clients N] [--seconds S] [--window W]
               plistsync bench fanout [--subscribers M] [--messages K] [--rate R]

        OPTIONS:
          --clients N        (put) Connections, each pipelining (default 16).
          --seconds S        (put) Measuring time (default 5).
          --window W         (put) PUTs in flight per connection (default 16).
          --subscribers M    (fanout) Subscribed connections (default 100).
          --messages K       (fanout) Changes written (default 2000).
          --rate R           (fanout) Changes per second; 0 = as fast as possible (default 1000).
          --server HOST:PORT Use a running server instead of starting one.
          --user NAME        Account on --server (default bench).
          --password P       Its password (default bench).
          -h, --help         Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(
            arguments,
            valueOptions: ["clients", "seconds", "window", "subscribers", "messages", "rate", "server", "user", "password"],
            flagOptions: [])
        guard options.positionals.count == 1, let scenario = options.positionals.first else {
            throw UsageError("name one scenario: put or fanout")
        }
        let throwaway: ThrowawayServer?
        let target: BenchTarget
        if let server = options.value("server") {
            guard let address = SocketAddress(parsing: server) else { throw UsageError("--server must be HOST:PORT") }
            throwaway = nil
            target = BenchTarget(address: address, user: options.value("user") ?? "bench", password: options.value("password") ?? "bench")
        } else {
            let started = try ThrowawayServer()
            throwaway = started
            target = BenchTarget(address: SocketAddress(host: "127.0.0.1", port: started.port), user: "bench", password: "bench")
        }
        defer { throwaway?.stop() }

        switch scenario {
        case "put":
            let clients = try options.integer("clients", default: 16, range: 1...10_000)
            let seconds = try options.integer("seconds", default: 5, range: 1...3600)
            let window = try options.integer("window", default: 16, range: 1...4096)
            guard let result = PutScenario(clients: clients, seconds: Double(seconds), window: window).run(against: target) else {
                throw RuntimeError("the benchmark could not connect or log in to \(target.address)")
            }
            print(String(format: "put clients=%d window=%d: %.0f acknowledged changes/s, ack latency %@ (%d acks in %.2f s, %d errors)",
                         clients, window, result.perSecond, result.latency.text, result.acknowledged, result.seconds, result.errors))
        case "fanout":
            let subscribers = try options.integer("subscribers", default: 100, range: 1...100_000)
            let messages = try options.integer("messages", default: 2000, range: 1...10_000_000)
            let rate = try options.integer("rate", default: 1000, range: 0...10_000_000)
            guard let result = FanoutScenario(subscribers: subscribers, messages: messages, rate: rate).run(against: target) else {
                throw RuntimeError("the benchmark could not connect, log in, or was disconnected by \(target.address)")
            }
            print(String(format: "fanout subscribers=%d rate=%@: %.0f delivered changes/s, write->delivery %@ (%d of %d delivered in %.2f s)",
                         subscribers, rate == 0 ? "blast" : "\(rate)/s", result.deliveredPerSecond, result.latency.text,
                         result.delivered, result.expected, result.seconds))
        default:
            throw UsageError("unknown scenario '\(scenario)': put or fanout")
        }
    }
}

/// A `plistsync serve` child on a free loopback port with a temporary data folder and a
/// `bench` account, removed again by `stop()`.
final class ThrowawayServer {
    let port: Int
    private let process = Process()
    private let folder: String

    init() throws {
        folder = NSTemporaryDirectory() + "plistsync-bench-" + UUID().uuidString
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let add = Process()
        add.executableURL = executable
        add.arguments = ["user", "add", "bench", "--password-stdin", "--iterations", "1000", "--data", folder]
        let input = Pipe()
        add.standardInput = input
        add.standardOutput = FileHandle.nullDevice
        try add.run()
        input.fileHandleForWriting.write(Data("bench\n".utf8))
        try input.fileHandleForWriting.close()
        add.waitUntilExit()
        let portFile = folder + "/port"
        process.executableURL = executable
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--data", folder, "--port-file", portFile, "--quiet"]
        try process.run()
        for _ in 0..<500 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                self.port = port
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
}
