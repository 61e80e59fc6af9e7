import EventLoop

/// A small HTTP listener that answers `GET /metrics` with the server's figures in the
/// Prometheus text format (version 0.0.4), one connection a scrape. Anything else gets 404;
/// a request that does not end its headers within 8 KiB is cut off. At most
/// `maxOpenConnections` are open at once (a scraper needs one): more are closed as they come,
/// so idle connections here cannot take the descriptors the protocol's clients need.
final class MetricsEndpoint {
    private var listener: TCPListener?
    private let render: () -> String
    static let maxOpenConnections = 8
    private var openConnections = 0

    init(loop: EventLoop, address: SocketAddress, render: @escaping () -> String) throws(LoopError) {
        self.render = render
        listener = try TCPListener(loop: loop, address: address) { [unowned self] connection in serve(connection) }
    }

    var address: SocketAddress? { listener?.address }

    func close() {
        listener?.close()
        listener = nil
    }

    /// A scraper that has not sent its request by then is cut off.
    static let requestTimeoutMilliseconds: UInt64 = 10_000

    private func serve(_ connection: TCPConnection) {
        guard openConnections < Self.maxOpenConnections else { return connection.close() }
        openConnections += 1
        var request: [UInt8] = []
        let deadline = LoopTimer(loop: connection.loop)
        deadline.start(after: Self.requestTimeoutMilliseconds) { connection.close() }
        connection.onClose = { [unowned self] in
            deadline.close()
            openConnections -= 1
        }
        connection.onData = { [unowned self] bytes in
            request += bytes
            guard let end = Self.headersEnd(request) else {
                if request.count > 8192 { connection.close() }
                return
            }
            let line = String(decoding: request[..<end].prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
            let words = line.split(separator: " ")
            let response: String
            if words.count >= 2, words[0] == "GET", words[1] == "/metrics" || words[1].hasPrefix("/metrics?") {
                let body = render()
                response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                    + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
            } else {
                response = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            }
            connection.onData = nil
            connection.write(response)
            connection.closeAfterWriting()
        }
        connection.onEnd = { _ in connection.close() }
        connection.startReading()
    }

    private static func headersEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 0x0D && bytes[index + 1] == 0x0A && bytes[index + 2] == 0x0D && bytes[index + 3] == 0x0A {
            return index
        }
        return nil
    }
}

/// Lines of the Prometheus text format.
struct MetricsText {
    private(set) var text = ""
    /// Series whose HELP and TYPE lines are written (once each, before the first sample).
    private var described: Set<String> = []

    mutating func add(_ name: String, _ kind: String, _ help: String, _ value: Double, labels: String = "") {
        if described.insert(name).inserted {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind)\n"
        }
        let number = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        text += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(number)\n"
    }
}
