import EventLoop
import Foundation
import LoadGenerator

/// `bench http` and `bench sse`: the HTTP API next to the line protocol, in the same run
/// against the same throwaway server.
extension BenchCommand {
    /// GET and PUT requests per second over each, the same record and connections, one request
    /// in flight per connection; runs alternate line, HTTP, line, HTTP so drift hits both.
    static func compareRequests(_ target: BenchTarget, _ httpAddress: SocketAddress, _ options: Arguments) throws {
        let clients = try options.integer("clients", default: 16, range: 1...10_000)
        let seconds = Double(try options.integer("seconds", default: 5, range: 1...3600))
        for operation in [RequestRateScenario.Operation.get, .put] {
            var rates: [RequestRateScenario.Transport: Double] = [:]
            for transport in [RequestRateScenario.Transport.line, .http] {
                let scenario = RequestRateScenario(transport: transport, operation: operation, clients: clients, seconds: seconds, httpAddress: httpAddress)
                guard let result = scenario.run(against: target) else {
                    throw RuntimeError("the \(transport.rawValue) \(operation.rawValue) run could not connect, log in, or was cut off")
                }
                rates[transport] = result.perSecond
                let shape = "\(operation.rawValue) c\(clients) \(transport.rawValue)"
                Console.out(String(format: "%@: %.0f requests/s, latency %@ (%d errors)", shape, result.perSecond, result.latency.text, result.errors))
                try record([(shape, result.perSecond, "req/s"), (shape + " p99", result.latency.p99Milliseconds, "ms")], of: "plistsync", options)
            }
            let ratio = (rates[.http] ?? 0) / max(1, rates[.line] ?? 0)
            Console.out(String(format: "%@ c%d: HTTP / line protocol = %.2f", operation.rawValue, clients, ratio))
            try record([("\(operation.rawValue) c\(clients) http/line", ratio, "ratio")], of: "plistsync", options)
        }
    }

    /// The server's memory per idle event stream; then fan-out to line-protocol subscribers and
    /// to as many event streams, the same writes.
    static func compareFanout(_ throwaway: ThrowawayServer, _ target: BenchTarget, _ httpAddress: SocketAddress, _ options: Arguments) throws {
        let subscribers = try options.integer("subscribers", default: 100, range: 1...100_000)
        let messages = try options.integer("messages", default: 2000, range: 1...10_000_000)
        let rate = try options.integer("rate", default: 1000, range: 0...10_000_000)
        let count = try options.integer("count", default: 1000, range: 1...1_000_000)
        OpenFileLimit.raiseToMaximum()
        // Memory first, on the fresh server: after the fan-out runs, freed memory it reuses
        // would hide what the streams take.
        let before = throwaway.residentKiB()
        var after = 0
        let idle = try IdleEventStreamsScenario(count: count, httpAddress: httpAddress).run(against: target) { after = throwaway.residentKiB() }
        let perStream = Double(after - before) / Double(max(1, idle.streams))
        Console.out(String(format: "idle event streams: %d open; server RSS %.1f MiB -> %.1f MiB, %.1f KiB per stream; one change reached %d of them",
                     idle.streams, Double(before) / 1024, Double(after) / 1024, perStream, idle.delivered))
        try record([("idle event stream RSS", perStream, "KiB")], of: "plistsync", options)
        for streams in [false, true] {
            var scenario = FanoutScenario(subscribers: subscribers, messages: messages, rate: rate)
            if streams { scenario.eventStreams = httpAddress }
            guard let result = try scenario.run(against: target) else {
                throw RuntimeError("the \(streams ? "event-stream" : "line") fan-out could not connect, or a subscriber was cut off")
            }
            let shape = "fanout s\(subscribers) \(rate == 0 ? "blast" : "\(rate)/s") \(streams ? "sse" : "line")"
            Console.out(String(format: "%@: %.0f delivered changes/s, write->delivery %@ (%d of %d delivered in %.2f s)",
                         shape, result.deliveredPerSecond, result.latency.text, result.delivered, result.expected, result.seconds))
            try record([(shape, result.deliveredPerSecond, "delivered/s"), (shape + " p50", result.latency.p50Milliseconds, "ms"),
                        (shape + " p99", result.latency.p99Milliseconds, "ms")], of: "plistsync", options)
        }
    }
}
