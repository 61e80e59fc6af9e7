/// One HTTP/1.1 response: a status, headers and a body, written out as bytes. A streamed
/// response (an event stream, a long listing) writes its `head` with `chunked` and then
/// `chunk`s of body, ended by `lastChunk`.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is `text` with `contentType`.
    public init(status: Int, contentType: String, text: String, headers: [HTTPHeader] = []) {
        self.init(status: status, headers: [HTTPHeader("Content-Type", contentType)] + headers, body: Array(text.utf8))
    }

    /// The status line and headers (with `Content-Length`, or `Transfer-Encoding: chunked` when
    /// the body follows in chunks) and the blank line; `keepAlive` false adds `Connection: close`,
    /// and `date` (an `HTTPDate` text) a `Date` header first, as an origin server with a clock
    /// must send one (RFC 9110 §6.6.1).
    public func head(keepAlive: Bool, chunked: Bool = false, date: String? = nil) -> String {
        var bytes: [UInt8] = []
        appendHead(to: &bytes, keepAlive: keepAlive, chunked: chunked, date: date)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The whole response, head and body, written straight into bytes (one a request).
    public func encoded(keepAlive: Bool, headOnly: Bool = false, date: String? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160 + headers.count * 48 + (headOnly ? 0 : body.count))
        appendHead(to: &bytes, keepAlive: keepAlive, chunked: false, date: date)
        if !headOnly { bytes += body }
        return bytes
    }

    private func appendHead(to bytes: inout [UInt8], keepAlive: Bool, chunked: Bool, date: String?) {
        bytes += "HTTP/1.1 ".utf8
        bytes += String(status).utf8
        bytes.append(0x20)
        bytes += Self.reason(status).utf8
        bytes += "\r\n".utf8
        if let date {
            bytes += "Date: ".utf8
            bytes += date.utf8
            bytes += "\r\n".utf8
        }
        for header in headers {
            bytes += header.name.utf8
            bytes += ": ".utf8
            bytes += header.value.utf8
            bytes += "\r\n".utf8
        }
        if chunked {
            bytes += "Transfer-Encoding: chunked\r\n".utf8
        } else if status >= 200, status != 204, status != 304 {
            bytes += "Content-Length: ".utf8
            bytes += String(body.count).utf8
            bytes += "\r\n".utf8
        }
        if !keepAlive { bytes += "Connection: close\r\n".utf8 }
        bytes += "\r\n".utf8
    }

    /// One chunk of a chunked body (`text` must not be empty: an empty chunk ends the body).
    public static func chunk(_ text: String) -> String {
        String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n"
    }

    /// The end of a chunked body.
    public static let lastChunk = "0\r\n\r\n"

    /// The reason phrase RFC 9110 gives `status`.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 507: "Insufficient Storage"
        default: "Status"
        }
    }
}
