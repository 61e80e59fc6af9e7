import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// `bench http`: requests per second for one kind of request (GET or PUT of a ~200-byte
/// record) over the line protocol or the HTTP API, with the same record, the same number of
/// connections, and one request in flight on each (as a browser or `curl` in a loop sends them:
/// HTTP/1.1 without pipelining). Both sides are written and read as raw bytes by the same
/// client code, so what differs is the server's path.
public struct RequestRateScenario {
    public enum Transport: String, Sendable {
        case line, http
    }

    public enum Operation: String, Sendable {
        case get = "GET", put = "PUT"
    }

    public var transport: Transport
    public var operation: Operation
    public var clients: Int
    public var seconds: Double
    /// The HTTP API's address (`transport == .http`).
    public var httpAddress: SocketAddress?
    public var collection = "bench_requests"

    public init(transport: Transport, operation: Operation, clients: Int, seconds: Double, httpAddress: SocketAddress? = nil) {
        self.transport = transport
        self.operation = operation
        self.clients = clients
        self.seconds = seconds
        self.httpAddress = httpAddress
    }

    /// Requests answered count as `acknowledged`, as PUTs do in `bench put`.
    public typealias Result = PutScenario.Result

    static let padding = String(repeating: "x", count: 150)

    static func fields(_ client: Int, _ value: Int) -> String {
        "{\"name\":\"record \(client)\",\"pad\":\"\(padding)\",\"serial\":\"SN-\(client)\",\"value\":\(value)}"
    }

    public func run(against target: BenchTarget) -> Result? {
        let loop = EventLoop()
        var latencies = LatencyHistogram()
        var answered = 0
        var errors = 0
        var measuring = false
        var startNanos: UInt64 = 0
        var endNanos: UInt64 = 0
        var failed = false
        var clientsReady = 0
        var connections: [TCPConnection] = []
        var starts: [() -> Void] = []
        let run = String(UInt32.random(in: 0...UInt32.max), radix: 36)

        func fail() {
            failed = true
            for connection in connections { connection.close() }
        }

        func begin() {
            startNanos = EventLoop.monotonicNanoseconds()
            measuring = true
            for start in starts { start() }
            LoopTimer.once(on: loop, after: UInt64(seconds * 1000)) {
                measuring = false
                endNanos = EventLoop.monotonicNanoseconds()
            }.unref()
        }

        /// One client: `request(rev)` is the bytes of its next request, `answer(bytes)` finds a
        /// whole reply in what has arrived (its length, and whether it was a success).
        func drive(_ connection: TCPConnection, request: @escaping (Int) -> [UInt8], answer: @escaping ([UInt8]) -> (length: Int, ok: Bool)?) {
            var buffer: [UInt8] = []
            var rev = 1
            var sentAt: UInt64 = 0
            func send() {
                sentAt = EventLoop.monotonicNanoseconds()
                connection.write(request(rev))
            }
            connection.onData = { bytes in
                buffer += bytes
                while let (length, ok) = answer(buffer) {
                    buffer.removeFirst(length)
                    if ok {
                        if operation == .put { rev += 1 }
                        if measuring {
                            answered += 1
                            latencies.add(EventLoop.monotonicNanoseconds() - sentAt)
                        }
                    } else {
                        errors += 1
                    }
                    if measuring { send() } else { connection.close() }
                }
            }
            starts.append(send)
        }

        func clientReady() {
            clientsReady += 1
            if clientsReady == clients { begin() }
        }

        func openLine(_ index: Int, _ id: String) {
            TCPConnection.connect(on: loop, to: target.address) { result in
                guard case .success(let connection) = result else { return fail() }
                connections.append(connection)
                var greeting: [UInt8] = []
                connection.onData = { bytes in
                    greeting += bytes
                    guard let auth = greeting.split(separator: 0x0A).first(where: { $0.starts(with: "a ".utf8) }) else { return }
                    guard auth.starts(with: "a OK".utf8) else { return fail() }
                    drive(connection, request: { rev in
                        let command: Command = operation == .get
                            ? .get(collection: collection, id: id) : .put(collection: collection, id: id, baseRev: Int64(rev), fieldsJSON: Self.fields(index, rev))
                        return Array("r \(command.requestText)\n".utf8)
                    }, answer: Self.lineReply)
                    clientReady()
                }
                connection.onEnd = { _ in if measuring { fail() } }
                let hello = Command.hello(version: "1", clientName: "bench"), auth = Command.auth(user: target.user, password: target.password)
                connection.write("h \(hello.requestText)\na \(auth.requestText)\n")
                connection.startReading()
            }
        }

        func openHTTP(_ index: Int, _ id: String, token: String) {
            guard let address = httpAddress else { return fail() }
            TCPConnection.connect(on: loop, to: address) { result in
                guard case .success(let connection) = result else { return fail() }
                connections.append(connection)
                let path = "/api/collections/\(collection)/records/\(id)"
                let head = "Host: bench\r\nAuthorization: Bearer \(token)\r\n"
                // One request first, so the connection's login is not measured.
                var buffer: [UInt8] = []
                connection.onData = { bytes in
                    buffer += bytes
                    guard let (_, ok) = Self.httpReply(buffer) else { return }
                    guard ok else { return fail() }
                    drive(connection, request: { rev in
                        if operation == .get { return Array("GET \(path) HTTP/1.1\r\n\(head)\r\n".utf8) }
                        let body = Self.fields(index, rev)
                        return Array("PUT \(path) HTTP/1.1\r\n\(head)If-Match: \"\(rev)\"\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
                    }, answer: Self.httpReply)
                    clientReady()
                }
                connection.onEnd = { _ in if measuring { fail() } }
                connection.write("GET /api/me HTTP/1.1\r\n\(head)\r\n")
                connection.startReading()
            }
        }

        // The setup connection creates the collection and each client's record (rev 1), and
        // for HTTP makes the token every client sends.
        target.open(on: loop) { setup in
            guard let setup else { return fail() }
            setup.send(.create(collection: collection)) { _ in }
            var created = 0
            for index in 0..<clients {
                setup.send(.put(collection: collection, id: "\(run)-\(index)", baseRev: 0, fieldsJSON: Self.fields(index, 0))) { line in
                    guard case .ok = line.reply else { return fail() }
                    created += 1
                    guard created == clients else { return }
                    guard transport == .http else {
                        setup.close()
                        for index in 0..<clients { openLine(index, "\(run)-\(index)") }
                        return
                    }
                    setup.send(.tokenNew(label: "bench")) { line in
                        guard case .ok(_, .token(let token), _) = line.reply else { return fail() }
                        setup.close()
                        for index in 0..<clients { openHTTP(index, "\(run)-\(index)", token: token) }
                    }
                }
            }
        }
        loop.run()
        loop.close()
        guard !failed, endNanos > startNanos else { return nil }
        return Result(acknowledged: answered, seconds: Double(endNanos - startNanos) / 1e9, latency: latencies.summary, errors: errors)
    }

    /// A whole line-protocol reply (`r OK …` / `r ERR …` up to its LF) at the buffer's start.
    static func lineReply(_ buffer: [UInt8]) -> (length: Int, ok: Bool)? {
        guard let newline = buffer.firstIndex(of: 0x0A) else { return nil }
        return (newline + 1, buffer.count > 2 && buffer[2] == UInt8(ascii: "O"))
    }

    /// A whole HTTP response with a Content-Length body at the buffer's start, read from its
    /// bytes as cheaply as `lineReply` reads a line (the client shares the cores with the
    /// server, so a costlier reader would lower the HTTP figure, not the server's).
    static func httpReply(_ buffer: [UInt8]) -> (length: Int, ok: Bool)? {
        guard let end = EventStreamGroup.find(headEnd, in: buffer), let field = EventStreamGroup.find(contentLength, in: buffer), field < end else { return nil }
        var length = 0
        var index = field + contentLength.count
        while index < end, buffer[index] >= UInt8(ascii: "0"), buffer[index] <= UInt8(ascii: "9") {
            length = length * 10 + Int(buffer[index] - UInt8(ascii: "0"))
            index += 1
        }
        let total = end + headEnd.count + length
        guard buffer.count >= total else { return nil }
        return (total, buffer.count > 9 && buffer[9] == UInt8(ascii: "2"))
    }

    private static let headEnd = Array("\r\n\r\n".utf8)
    /// As the server writes it.
    private static let contentLength = Array("\r\nContent-Length: ".utf8)
}
