import CHTTPParser

/// Reads HTTP/1.1 requests out of a connection's bytes, however they are cut, with Node's
/// parser (libhttp-parser): pipelined requests in order, Content-Length and chunked bodies,
/// within `HTTPLimits`. Pure (no socket): a connection feeds it what it reads and serves the
/// requests that come out; once `error` is set it answers that status and closes.
public final class HTTPRequestReader {
    public let limits: HTTPLimits
    /// Why the bytes stopped being requests; nothing more is read after it.
    public private(set) var error: HTTPReadError?
    /// A request asked for the connection to close (`Connection: close`, HTTP/1.0): what
    /// follows it is not read.
    public private(set) var isClosed = false

    /// The most a body may be now (at most `limits.maxBodyBytes`): a connection that has not
    /// logged in lowers it, so that one it does not know cannot make it hold much.
    public var bodyLimit: Int
    /// Whether a request whose body may pass `bodyLimit` (announced larger, or chunked) stops
    /// the reader at its head (`heldHead`) rather than being refused, so that the connection
    /// can log in with the credentials of its head and then take its body
    /// (`takeHeldBody(upTo:)`) or refuse it. No byte of the body is read meanwhile.
    public var holdsLargeBodies = false
    /// The head of a request waiting for leave to read its body (its `body` is empty).
    public private(set) var heldHead: HTTPRequest?
    /// What was read after the held head, unparsed (at most one read).
    private var unparsed: [UInt8] = []

    /// Bytes of the request being read (its head and body so far): what a connection holds
    /// for it.
    public var bufferedBytes: Int { headerBytes + body.count + unparsed.count }

    private let parser: UnsafeMutablePointer<http_parser>
    private let settings: UnsafeMutablePointer<http_parser_settings>
    private var target: [UInt8] = []
    private var headers: [HTTPHeader] = []
    private var field: [UInt8] = []
    private var value: [UInt8] = []
    private var readingValue = false
    private var headerBytes = 0
    private var body: [UInt8] = []
    private var complete: [HTTPRequest] = []

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
        bodyLimit = limits.maxBodyBytes
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        settings = .allocate(capacity: 1)
        http_parser_settings_init(settings)
        settings.pointee.on_message_begin = { HTTPRequestReader.reader($0).beginMessage() }
        settings.pointee.on_url = { HTTPRequestReader.reader($0).appendTarget($1, $2) }
        settings.pointee.on_header_field = { HTTPRequestReader.reader($0).appendField($1, $2) }
        settings.pointee.on_header_value = { HTTPRequestReader.reader($0).appendValue($1, $2) }
        settings.pointee.on_headers_complete = { HTTPRequestReader.reader($0).headersComplete() }
        settings.pointee.on_chunk_header = { HTTPRequestReader.reader($0).chunkAnnounced() }
        settings.pointee.on_body = { HTTPRequestReader.reader($0).appendBody($1, $2) }
        settings.pointee.on_message_complete = { HTTPRequestReader.reader($0).messageComplete() }
    }

    deinit {
        parser.deallocate()
        settings.deallocate()
    }

    /// Reads `bytes`; the requests they complete, in order (a request cut across reads comes
    /// out with the read that ends it). Check `error` after serving them, and `heldHead`: while
    /// a head is held nothing more is read.
    public func feed(_ bytes: [UInt8]) -> [HTTPRequest] {
        guard error == nil, !isClosed, !bytes.isEmpty else { return [] }
        guard heldHead == nil else {
            unparsed += bytes
            return []
        }
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let parsed = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { http_parser_execute(parser, settings, $0.baseAddress, $0.count) }
        }
        parser.pointee.data = nil
        let status = http_errno(parser.pointee.http_errno)
        if heldHead != nil {
            // Paused at the held head: the rest waits (from the headers' last LF, which the
            // parser has not taken yet).
            unparsed = Array(bytes[parsed...])
        } else if error == nil, !isClosed {
            if parser.pointee.upgrade == 1 {
                error = .upgradeRefused
            } else if status != HPE_OK {
                error = .malformed(String(cString: http_errno_description(status)))
            }
        }
        defer { complete.removeAll() }
        return complete
    }

    /// Lets the held head's body be read, up to `limit` bytes (a logged-in connection's), and
    /// reads on; the requests that completes, as `feed` gives them.
    public func takeHeldBody(upTo limit: Int) -> [HTTPRequest] {
        guard heldHead != nil else { return [] }
        heldHead = nil
        bodyLimit = min(limit, limits.maxBodyBytes)
        http_parser_pause(parser, 0)
        let rest = unparsed
        unparsed = []
        // The body may have been announced past the new limit too.
        let announced = parser.pointee.content_length
        if announced != UInt64.max, announced > UInt64(bodyLimit) {
            _ = fail(.bodyTooLarge)
            return []
        }
        return rest.isEmpty ? [] : feed(rest)
    }

    private static func reader(_ parser: UnsafeMutablePointer<http_parser>?) -> HTTPRequestReader {
        Unmanaged<HTTPRequestReader>.fromOpaque(parser!.pointee.data!).takeUnretainedValue()
    }

    /// Stops the parser with `reason`: a callback's -1 (on_headers_complete reads 1 and 2 as
    /// "no body" and "upgrade", not as errors).
    private func fail(_ reason: HTTPReadError) -> Int32 {
        error = reason
        // Nothing more is read: what the unfinished request held is let go at once.
        target = []
        headers = []
        field = []
        value = []
        headerBytes = 0
        body = []
        unparsed = []
        heldHead = nil
        return -1
    }

    private func beginMessage() -> Int32 {
        // Capacity is kept: the next request of the connection is much like this one.
        target.removeAll(keepingCapacity: true)
        headers.removeAll(keepingCapacity: true)
        field.removeAll(keepingCapacity: true)
        value.removeAll(keepingCapacity: true)
        readingValue = false
        headerBytes = 0
        body.removeAll()
        return 0
    }

    /// Counts header bytes; false past the limit.
    private func countHeaderBytes(_ count: Int) -> Bool {
        headerBytes += count
        return headerBytes <= limits.maxHeaderBytes
    }

    private func appendTarget(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard countHeaderBytes(count) else { return fail(.headersTooLarge) }
        append(bytes, count, to: &target)
        return 0
    }

    private func appendField(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard countHeaderBytes(count) else { return fail(.headersTooLarge) }
        if readingValue, !finishHeader() { return fail(.headersTooLarge) }
        let start = field.count
        append(bytes, count, to: &field)
        // RFC 9112 §5.1: a field name is a token, with no whitespace before its colon; a
        // server must refuse one with it (`Transfer-Encoding : chunked` is a smuggling shape
        // behind a proxy that reads it otherwise). The parser lets spaces through.
        guard field[start...].allSatisfy(Self.isTokenByte) else {
            return fail(.malformed("invalid character in a header name (no whitespace may come before the colon)"))
        }
        return 0
    }

    /// `tchar` of RFC 9110 §5.6.2.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
            UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "|"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private func appendValue(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard countHeaderBytes(count) else { return fail(.headersTooLarge) }
        readingValue = true
        append(bytes, count, to: &value)
        return 0
    }

    /// Files the header just read; false when that makes too many.
    private func finishHeader() -> Bool {
        headers.append(HTTPHeader(String(decoding: field, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        field.removeAll(keepingCapacity: true)
        value.removeAll(keepingCapacity: true)
        readingValue = false
        return headers.count <= limits.maxHeaders
    }

    private func headersComplete() -> Int32 {
        if readingValue || !field.isEmpty, !finishHeader() { return fail(.headersTooLarge) }
        // Announced larger than allowed: refused before a byte of it is read.
        let announced = parser.pointee.content_length
        if announced != UInt64.max, announced > UInt64(limits.maxBodyBytes) { return fail(.bodyTooLarge) }
        let chunked = UInt32(parser.pointee.flags) & UInt32(F_CHUNKED.rawValue) != 0
        guard chunked ? bodyLimit < limits.maxBodyBytes : announced != UInt64.max && announced > UInt64(bodyLimit) else { return 0 }
        guard holdsLargeBodies, parser.pointee.upgrade == 0 else { return fail(.bodyTooLarge) }
        heldHead = HTTPRequest(method: methodName, target: String(decoding: target, as: UTF8.self), headers: headers,
                               keepAlive: http_should_keep_alive(parser) != 0)
        http_parser_pause(parser, 1)
        return 0
    }

    private var methodName: String { String(cString: http_method_str(http_method(parser.pointee.method))) }

    /// A chunk's size line: a chunk that would take the body past the limit is refused now,
    /// before its bytes (which may never come) are waited for.
    private func chunkAnnounced() -> Int32 {
        let size = parser.pointee.content_length
        if size != UInt64.max, size > UInt64(bodyLimit - body.count) { return fail(.bodyTooLarge) }
        return 0
    }

    private func appendBody(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard body.count + count <= bodyLimit else { return fail(.bodyTooLarge) }
        append(bytes, count, to: &body)
        return 0
    }

    private func messageComplete() -> Int32 {
        // A protocol switch (Upgrade with Connection: upgrade, CONNECT) is answered 501 and
        // nothing else: the request is not served.
        if parser.pointee.upgrade == 1 { return fail(.upgradeRefused) }
        let keepAlive = http_should_keep_alive(parser) != 0
        complete.append(HTTPRequest(method: methodName, target: String(decoding: target, as: UTF8.self), headers: headers, body: body,
                                    keepAlive: keepAlive))
        if !keepAlive {
            isClosed = true
            http_parser_pause(parser, 1)
        }
        return 0
    }

    private func append(_ bytes: UnsafePointer<CChar>?, _ count: Int, to buffer: inout [UInt8]) {
        guard let bytes, count > 0 else { return }
        bytes.withMemoryRebound(to: UInt8.self, capacity: count) { buffer.append(contentsOf: UnsafeBufferPointer(start: $0, count: count)) }
    }
}
