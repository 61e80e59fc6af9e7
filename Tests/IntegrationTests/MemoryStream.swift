import Foundation
import PlistSyncTesting
@testable import ServerKit

/// The client end of a connection to the simulated server, read the way a socket is
/// (`TestStream`), virtual time running while it waits.
final class MemoryStream: TestStream {
    private let connection: SimulatedConnection
    private let scheduler: Scheduler
    private var bytes: MemoryByteConnection { connection.bytes }

    init(_ connection: SimulatedConnection, scheduler: Scheduler) {
        self.connection = connection
        self.scheduler = scheduler
    }

    func send(bytes: [UInt8]) throws {
        connection.send(bytes: bytes)
    }

    /// Runs virtual time until `ready` holds or 10 s pass; false when the connection closed first.
    private func turn(until ready: () -> Bool, timeout: Double?) throws -> Bool {
        let bytes = self.bytes
        guard scheduler.run(within: UInt64((timeout ?? 10) * 1000), until: { ready() || bytes.isClosed }) else {
            throw LineClient.Failure(description: "timed out in memory; have \(bytes.output.count) bytes")
        }
        return ready()
    }

    func readLine(timeout: Double?) throws -> String? {
        guard try turn(until: { bytes.output.contains(0x0A) }, timeout: timeout) else {
            guard !bytes.output.isEmpty else { return nil }
            defer { bytes.output = [] }
            return String(decoding: bytes.output, as: UTF8.self)
        }
        let newline = bytes.output.firstIndex(of: 0x0A)!
        defer { bytes.output.removeFirst(newline + 1) }
        return String(decoding: bytes.output[..<newline], as: UTF8.self)
    }

    func readBytes(_ count: Int, timeout: Double?) throws -> [UInt8] {
        _ = try turn(until: { bytes.output.count >= count }, timeout: timeout)
        let taken = Array(bytes.output.prefix(count))
        bytes.output.removeFirst(taken.count)
        return taken
    }

    func closedByServer(within seconds: Double) -> Bool {
        let bytes = self.bytes
        return scheduler.run(within: UInt64(seconds * 1000)) { bytes.isClosed }
    }
}

/// An HTTP client of a server in memory.
typealias MemoryHTTPClient = HTTPExchangeClient<MemoryStream>

extension InMemoryServer {
    /// A connection to the server's HTTP API, in memory.
    func httpConnect() -> MemoryHTTPClient {
        MemoryHTTPClient(MemoryStream(simulated.connectHTTP(), scheduler: scheduler))
    }
}
