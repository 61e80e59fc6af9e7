import EventLoop
import Foundation
import SyncClient
import SyncCore
import SyncProtocol

/// `bench scale`, reads: `clients` connections each read a whole collection at once (a LIST,
/// or a SUB SINCE 0 replay), as fast as they take it in, while `sample` is called every 20 ms
/// (to read the server's memory).
public struct ReadAllScenario {
    public enum Read: String, Sendable {
        case list
        case replay
    }

    public var collection: String
    /// What each client reads.
    public var reads: [Read]
    public var clients: Int { reads.count }

    public init(collection: String, clients: Int, read: Read) {
        self.init(collection: collection, reads: Array(repeating: read, count: clients))
    }

    public init(collection: String, reads: [Read]) {
        self.collection = collection
        self.reads = reads
    }

    public struct Result: Sendable {
        public var seconds: Double
        /// Records each client received.
        public var records: [Int]
        /// Bytes of lines all clients received.
        public var bytes: Int
    }

    public func run(against target: BenchTarget, sample: @escaping () -> Void) throws -> Result {
        let loop = EventLoop()
        var connections: [ClientConnection] = []
        var records = [Int](repeating: 0, count: clients)
        var bytes = 0
        var finished = 0
        var failure: String?
        var started: UInt64 = 0
        let sampler = LoopTimer(loop: loop)
        func tick() {
            sample()
            sampler.start(after: 20) { tick() }
        }
        func begin() {
            started = EventLoop.monotonicNanoseconds()
            tick()
            for (index, client) in connections.enumerated() {
                client.onUntagged = { line in
                    bytes += line.bytes.count + 1
                    if line.bytes.starts(with: "* RECORD ".utf8) || line.bytes.starts(with: "* CHANGE ".utf8) { records[index] += 1 }
                }
                let command: Command = reads[index] == .list ? .list(collection: collection) : .subscribe(collection: collection, since: 0)
                client.send(command) { line in
                    if case .error = line.reply { failure = line.text }
                    finished += 1
                    if finished == clients { loop.stop() }
                }
            }
        }
        for _ in 0..<clients {
            target.open(on: loop) { client in
                guard let client else {
                    failure = "cannot log in"
                    return loop.stop()
                }
                connections.append(client)
                if connections.count == clients { begin() }
            }
        }
        loop.run()
        let seconds = Double(EventLoop.monotonicNanoseconds() - started) / 1e9
        sampler.close()
        for connection in connections { connection.close() }
        loop.runOnce(wait: false)
        loop.close()
        if let failure { throw BenchFailure(failure) }
        return Result(seconds: seconds, records: records, bytes: bytes)
    }
}
