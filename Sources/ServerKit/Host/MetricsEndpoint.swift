import EventLoop
import Foundation
import HTTPKit

/// A small HTTP listener that answers `GET /metrics` (and HEAD) with the server's figures in
/// the Prometheus text format (version 0.0.4), one connection a scrape. Requests are read by
/// HTTPKit under the API's rules (a malformed one is answered 400, too large headers 431);
/// another path gets 404, another method 405. A request that does not end its headers within
/// 8 KiB or 10 s is cut off. At most `maxOpenConnections` are open at once (a scraper needs
/// one): more are closed as they come, so idle connections here cannot take the descriptors
/// the protocol's clients need.
final class MetricsEndpoint {
    private var listener: TCPListener?
    private let render: () -> String
    private let clock: any ServerClock
    static let maxOpenConnections = 8
    private var openConnections = 0
    static let limits = HTTPLimits(maxHeaderBytes: 8 * 1024, maxHeaders: 64, maxBodyBytes: 0)

    init(loop: EventLoop, clock: any ServerClock, address: SocketAddress, render: @escaping () -> String) throws(LoopError) {
        self.clock = clock
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
        let reader = HTTPRequestReader(limits: Self.limits)
        let deadline = LoopTimer(loop: connection.loop)
        deadline.start(after: Self.requestTimeoutMilliseconds) { connection.close() }
        connection.onClose = { [unowned self] in
            deadline.close()
            openConnections -= 1
        }
        connection.onData = { [unowned self] bytes in
            let requests = reader.feed(bytes)
            let answer: [UInt8]
            let date = HTTPDate.text(secondsSince1970: clock.wallClockSeconds)
            if let request = requests.first {
                answer = response(to: request).encoded(keepAlive: false, headOnly: request.method == "HEAD", date: date)
            } else if let error = reader.error {
                answer = HTTPResponse(status: error.status, contentType: "text/plain; charset=utf-8", text: error.description + "\n")
                    .encoded(keepAlive: false, date: date)
            } else {
                return
            }
            connection.onData = nil
            connection.write(answer)
            connection.closeAfterWriting()
        }
        connection.onEnd = { _ in connection.close() }
        connection.startReading()
    }

    private func response(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, contentType: "text/plain; charset=utf-8", text: "/metrics is read with GET\n",
                                headers: [HTTPHeader("Allow", "GET, HEAD")])
        }
        guard request.path == "/metrics" else { return HTTPResponse(status: 404) }
        return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", text: render())
    }
}
