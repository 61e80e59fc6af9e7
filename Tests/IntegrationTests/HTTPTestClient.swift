import Foundation
import XCTest

/// An HTTP/1.1 response as a test reads it off the socket.
struct HTTPTestResponse {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (numbers as NSNumber: for exact types compare `text`).
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

/// One event of an event stream.
struct ServerSentEvent: Equatable {
    var event = "message"
    var id: String?
    var data = ""
}

/// The client end of a connection as the HTTP test client reads it: a real socket
/// (`LineClient`) or bytes in memory (`MemoryStream`), with the same blocking reads.
protocol TestStream: AnyObject {
    func send(bytes: [UInt8]) throws
    /// The next line without its LF; nil when the server closed the connection.
    func readLine(timeout: Double?) throws -> String?
    /// The next `count` bytes; fewer when the server closed first.
    func readBytes(_ count: Int, timeout: Double?) throws -> [UInt8]
    func closedByServer(within seconds: Double) -> Bool
}

extension LineClient: TestStream {}

/// An HTTP client over a real TCP connection.
typealias HTTPTestClient = HTTPExchangeClient<LineClient>

extension HTTPExchangeClient where Stream == LineClient {
    convenience init(port: Int) throws {
        self.init(try LineClient(port: port))
    }

    /// Logs in with a password and keeps the token for later requests.
    static func login(port: Int, _ user: String, _ password: String) throws -> HTTPTestClient {
        try HTTPTestClient(port: port).loggedIn(user, password)
    }
}

/// A blocking HTTP/1.1 client over one connection: requests written by hand (so a test can
/// also send garbage, pipeline, or stop halfway), responses read with Content-Length, chunked
/// or to the close, and event streams read event by event.
final class HTTPExchangeClient<Stream: TestStream> {
    let connection: Stream
    /// Sent with every request when set: `Authorization: Bearer <token>`.
    var token: String?
    /// Sent with every request when set, as `Cookie: plistsync_token=<cookie>`.
    var cookie: String?

    init(_ connection: Stream) {
        self.connection = connection
    }

    /// Logs in with a password and keeps the token for later requests.
    func loggedIn(_ user: String, _ password: String) throws -> Self {
        let response = try request("POST", "/api/login", json: #"{"user":"\#(user)","password":"\#(password)"}"#)
        XCTAssertEqual(response.status, 200, response.text)
        token = response.json["token"] as? String
        return self
    }

    /// `text` percent-encoded for a query value.
    static func queryEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    func requestBytes(_ method: String, _ target: String, headers: [String: String] = [:], body: String? = nil, json: String? = nil) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        var all = headers
        if let token, all["Authorization"] == nil { all["Authorization"] = "Bearer \(token)" }
        if let cookie { all["Cookie"] = "plistsync_token=\(cookie)" }
        let content = json ?? body
        if json != nil, all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        if let content { all["Content-Length"] = String(content.utf8.count) }
        for (name, value) in all.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n" + (content ?? "")).utf8)
    }

    func send(_ method: String, _ target: String, headers: [String: String] = [:], body: String? = nil, json: String? = nil) throws {
        try connection.send(bytes: requestBytes(method, target, headers: headers, body: body, json: json))
    }

    func request(_ method: String, _ target: String, headers: [String: String] = [:], body: String? = nil, json: String? = nil) throws -> HTTPTestResponse {
        try send(method, target, headers: headers, body: body, json: json)
        return try response(headOnly: method == "HEAD")
    }

    /// The status line and headers of the next response.
    func head() throws -> (status: Int, headers: [(name: String, value: String)]) {
        guard let statusLine = try connection.readLine(timeout: nil) else { throw LineClient.Failure(description: "connection closed before a response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw LineClient.Failure(description: "not a status line: \(statusLine)") }
        var headers: [(String, String)] = []
        while let line = try connection.readLine(timeout: nil)?.trimmingCharacters(in: CharacterSet(charactersIn: "\r")), !line.isEmpty {
            let pair = line.split(separator: ":", maxSplits: 1)
            headers.append((String(pair[0]), pair.count > 1 ? pair[1].trimmingCharacters(in: .whitespaces) : ""))
        }
        return (status, headers)
    }

    func response(headOnly: Bool = false) throws -> HTTPTestResponse {
        let (status, headers) = try head()
        let found = HTTPTestResponse(status: status, headers: headers, body: [])
        if headOnly || status == 204 || status == 304 { return found }
        var body: [UInt8] = []
        if let length = found.header("Content-Length").flatMap(Int.init) {
            body = try connection.readBytes(length, timeout: nil)
        } else if found.header("Transfer-Encoding") == "chunked" {
            while let sizeLine = try connection.readLine(timeout: nil), let size = Int(sizeLine.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16) {
                if size == 0 {
                    _ = try connection.readLine(timeout: nil)
                    break
                }
                body += try connection.readBytes(size, timeout: nil)
                _ = try connection.readLine(timeout: nil)
            }
        } else {
            while let line = try connection.readLine(timeout: nil) { body += Array((line + "\n").utf8) }
        }
        return HTTPTestResponse(status: status, headers: headers, body: body)
    }

    /// The next event of an event stream whose head was read (chunk sizes skipped); nil at its end.
    func nextEvent(timeout: Double = 10) throws -> ServerSentEvent? {
        var event = ServerSentEvent()
        var hasField = false
        while true {
            guard let raw = try connection.readLine(timeout: timeout) else { return nil }
            let line = raw.trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            if line.isEmpty {
                if hasField { return event }
                continue
            }
            if line.hasPrefix(":") { continue }
            if line == "0", !hasField {
                _ = try connection.readLine(timeout: timeout)  // the blank line after the last chunk
                return nil
            }
            if !line.contains(":") { continue }  // a chunk size
            let pair = line.split(separator: ":", maxSplits: 1)
            let value = pair.count > 1 ? String(pair[1].drop { $0 == " " }) : ""
            if pair[0] == "retry" { continue }  // the reconnect hint opening each stream: no event (EventSource dispatches none)
            hasField = true
            switch pair[0] {
            case "event": event.event = value
            case "id": event.id = value
            case "data": event.data += value
            default: break
            }
        }
    }
}
