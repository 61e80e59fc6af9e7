import EventLoop
import Foundation
import PlistSyncTesting
@testable import ServerKit

/// The client end of a `MemoryByteConnection`, read the way a socket is (`TestStream`).
final class MemoryStream: TestStream {
    private let connection: MemoryByteConnection
    private let loop: EventLoop

    init(_ connection: MemoryByteConnection, loop: EventLoop) {
        self.connection = connection
        self.loop = loop
    }

    func send(bytes: [UInt8]) throws {
        connection.receive(bytes)
    }

    /// Turns the loop until `ready` holds or 10 s pass; false when the connection closed first.
    private func turn(until ready: () -> Bool, timeout: Double?) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout ?? 10)
        while !ready() {
            if connection.isClosed { return false }
            guard Date() < deadline else { throw LineClient.Failure(description: "timed out in memory; have \(connection.output.count) bytes") }
            loop.runOnce(wait: false)
            usleep(50)
        }
        return true
    }

    func readLine(timeout: Double?) throws -> String? {
        guard try turn(until: { connection.output.contains(0x0A) }, timeout: timeout) else {
            guard !connection.output.isEmpty else { return nil }
            defer { connection.output = [] }
            return String(decoding: connection.output, as: UTF8.self)
        }
        let newline = connection.output.firstIndex(of: 0x0A)!
        defer { connection.output.removeFirst(newline + 1) }
        return String(decoding: connection.output[..<newline], as: UTF8.self)
    }

    func readBytes(_ count: Int, timeout: Double?) throws -> [UInt8] {
        _ = try turn(until: { connection.output.count >= count }, timeout: timeout)
        let bytes = Array(connection.output.prefix(count))
        connection.output.removeFirst(bytes.count)
        return bytes
    }

    func closedByServer(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if connection.isClosed { return true }
            loop.runOnce(wait: false)
            usleep(50)
        }
        return false
    }
}

/// An HTTP client of a server in memory.
typealias MemoryHTTPClient = HTTPExchangeClient<MemoryStream>

extension InMemoryServer {
    /// A connection to the server's HTTP API, in memory.
    func httpConnect() -> MemoryHTTPClient {
        let connection = MemoryByteConnection(loop: loop)
        server.serveHTTP(over: connection)
        return MemoryHTTPClient(MemoryStream(connection, loop: loop))
    }
}
