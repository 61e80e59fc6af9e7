import EventLoop
import SyncClient
import SyncCore
import SyncProtocol
import Foundation

/// `bench connections`: K authenticated, subscribed, idle connections; the server's memory per
/// connection, and one change delivered to all of them to show they are alive.
public struct ConnectionsScenario {
    public var count: Int
    public var collection = "bench_connections"

    public init(count: Int) {
        self.count = count
    }

    public struct Result: Sendable {
        public var connections: Int
        public var delivered: Int
        public var setupSeconds: Double
    }

    /// `measure` is called once every connection is subscribed (to read the server's memory).
    public func run(against target: BenchTarget, measure: () -> Void) throws -> Result {
        let loop = EventLoop()
        var connections: [ClientConnection] = []
        var subscribed = 0
        var delivered = 0
        var failure: String?
        let started = Date()
        var opened = 0
        let wave = 250

        func openWave() {
            let end = min(count, opened + wave)
            var ready = 0
            let waveSize = end - opened
            for _ in opened..<end {
                target.open(on: loop) { client in
                    guard let client else {
                        failure = "connection \(connections.count + 1) could not log in (open-file limit?)"
                        return loop.stop()
                    }
                    connections.append(client)
                    client.onUntagged = { line in
                        guard line.bytes.starts(with: "* CHANGE".utf8) else { return }
                        delivered += 1
                        if delivered == count { loop.stop() }
                    }
                    client.send(.subscribe(collection: collection, since: 0)) { _ in
                        subscribed += 1
                        ready += 1
                        if ready == waveSize {
                            if subscribed == count { loop.stop() } else { openWave() }
                        }
                    }
                }
            }
            opened = end
        }

        target.open(on: loop) { setup in
            guard let setup else {
                failure = "cannot log in"
                return loop.stop()
            }
            setup.send(.create(collection: collection)) { _ in openWave() }
            connections.append(setup)
        }
        loop.run()
        if let failure { throw BenchFailure(failure) }
        let setupSeconds = Date().timeIntervalSince(started)
        measure()
        // One change must reach every idle subscriber.
        connections[0].send(.put(collection: collection, id: "ping", baseRev: 0, fieldsJSON: ValueJSON.encode(.dictionary(["t": .integer(1)]))), tag: "w")
        let deadline = LoopTimer(loop: loop)
        deadline.start(after: 30_000) { loop.stop() }
        loop.run()
        deadline.close()
        for connection in connections { connection.close() }
        loop.runOnce(wait: false)
        loop.close()
        return Result(connections: subscribed, delivered: delivered, setupSeconds: setupSeconds)
    }
}
