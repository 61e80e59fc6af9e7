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

    /// Bytes of the request being read (its head and body so far): what a connection holds
    /// for it.
    public var bufferedBytes: Int { headerBytes + body.count }

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
    /// out with the read that ends it). Check `error` after serving them.
    public func feed(_ bytes: [UInt8]) -> [HTTPRequest] {
        guard error == nil, !isClosed, !bytes.isEmpty else { return [] }
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        _ = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { http_parser_execute(parser, settings, $0.baseAddress, $0.count) }
        }
        parser.pointee.data = nil
        let status = http_errno(parser.pointee.http_errno)
        if error == nil, !isClosed {
            if parser.pointee.upgrade == 1 {
                error = .upgradeRefused
            } else if status != HPE_OK {
                error = .malformed(String(cString: http_errno_description(status)))
            }
        }
        defer { complete.removeAll() }
        return complete
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
        return -1
    }

    private func beginMessage() -> Int32 {
        target.removeAll()
        headers.removeAll()
        field.removeAll()
        value.removeAll()
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
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
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
        return 0
    }

    /// A chunk's size line: a chunk that would take the body past the limit is refused now,
    /// before its bytes (which may never come) are waited for.
    private func chunkAnnounced() -> Int32 {
        let size = parser.pointee.content_length
        if size != UInt64.max, size > UInt64(limits.maxBodyBytes - body.count) { return fail(.bodyTooLarge) }
        return 0
    }

    private func appendBody(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard body.count + count <= limits.maxBodyBytes else { return fail(.bodyTooLarge) }
        append(bytes, count, to: &body)
        return 0
    }

    private func messageComplete() -> Int32 {
        // A protocol switch (Upgrade with Connection: upgrade, CONNECT) is answered 501 and
        // nothing else: the request is not served.
        if parser.pointee.upgrade == 1 { return fail(.upgradeRefused) }
        let method = String(cString: http_method_str(http_method(parser.pointee.method)))
        let keepAlive = http_should_keep_alive(parser) != 0
        complete.append(HTTPRequest(method: method, target: String(decoding: target, as: UTF8.self), headers: headers, body: body,
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
