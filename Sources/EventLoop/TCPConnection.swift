import CLibUV
import Glibc

/// One TCP stream on the loop: reads as byte chunks, coalesced queued writes, orderly close.
///
/// Ownership: the handle holds a retained reference to this object from init until libuv's
/// close callback, so a connection lives exactly as long as its socket; drop it by `close()`.
public final class TCPConnection {
    /// Why a connection's reading ended.
    public enum EndOfInput: Sendable, Equatable {
        /// The peer closed its side.
        case eof
        /// A socket error (reset, timeout), with libuv's text.
        case failed(String)
    }

    public let loop: EventLoop
    let handle: UnsafeMutablePointer<uv_tcp_t>
    private var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutablePointer(OpaquePointer(handle)) }

    /// Called with each chunk of bytes received.
    public var onData: (([UInt8]) -> Void)?
    /// Called once when reading ends; the connection is still open for writes.
    public var onEnd: ((EndOfInput) -> Void)?
    /// Called when every queued byte has been handed to the kernel.
    public var onDrain: (() -> Void)?
    /// Called once, after the socket is closed and its memory released.
    public var onClose: (() -> Void)?

    private var output = OutputQueue()
    private var flushScheduled = false
    private var bytesInFlight = 0
    private var closing = false
    private var shutdownRequested = false
    private var inputEnded = false
    private var graceTimer: LoopTimer?

    /// How long `closeAfterWriting` waits for a peer that does not read before it cuts it off.
    public static let defaultCloseGraceMilliseconds: UInt64 = 2_000
    /// About how many bytes are handed to libuv at a time beyond what the kernel took at once.
    static let maxBytesInFlight = 64 << 10
    /// What the kernel's send buffer grows by for a connection's last line, when what libuv
    /// holds was dropped for it (a peer that stopped reading has filled the buffer).
    static let lastLineRoom = 256 << 10

    /// The remote endpoint, read once at accept or connect.
    public private(set) var peer: SocketAddress?

    /// TLS (or another layer) between the socket and `onData`/`write`; set it before reading.
    public var security: StreamSecurity? {
        didSet { scheduleFlush() }
    }

    init(loop: EventLoop) {
        self.loop = loop
        handle = .allocate(capacity: 1)
        uv_tcp_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    static func owner(_ pointer: UnsafeMutableRawPointer?) -> TCPConnection {
        Unmanaged<TCPConnection>.fromOpaque(pointer!).takeUnretainedValue()
    }

    func didConnect() {
        uv_tcp_nodelay(handle, 1)
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            uv_tcp_getpeername(handle, UnsafeMutablePointer<sockaddr>(OpaquePointer($0)), &length)
        }
        if result == 0 { peer = SocketAddress.from(storage) }
    }

    /// Opens a connection to `address`; `completion` runs on the loop thread.
    public static func connect(
        on loop: EventLoop, to address: SocketAddress,
        completion: @escaping (Result<TCPConnection, LoopError>) -> Void
    ) {
        let connection = TCPConnection(loop: loop)
        let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(ConnectBox(connection, completion)).toOpaque()
        do {
            try address.withSockaddr { sockaddr throws(LoopError) in
                try check(uv_tcp_connect(request, connection.handle, sockaddr) { request, status in
                    let box = Unmanaged<ConnectBox>.fromOpaque(request!.pointee.data).takeRetainedValue()
                    request!.deallocate()
                    if status < 0 {
                        box.connection.close()
                        box.completion(.failure(LoopError(status, "connect")))
                    } else {
                        box.connection.didConnect()
                        box.completion(.success(box.connection))
                    }
                }, "connect")
            }
        } catch {
            Unmanaged<ConnectBox>.fromOpaque(request.pointee.data).release()
            request.deallocate()
            connection.close()
            completion(.failure(error))
        }
    }

    /// Caps the kernel's send buffer for this socket at `bytes` (Linux doubles it), instead of
    /// letting it grow to `net.ipv4.tcp_wmem`'s maximum: a client that stops reading then costs
    /// the kernel that much, not megabytes copied in for nothing.
    public func limitSendBuffer(to bytes: Int) {
        var value = Int32(clamping: bytes)
        uv_send_buffer_size(asHandle(handle), &value)
    }

    /// Starts delivering received bytes to `onData`.
    public func startReading() {
        guard !closing else { return }
        uv_read_start(stream, { handle, _, buffer in
            let connection = TCPConnection.owner(handle!.pointee.data)
            buffer!.pointee = uv_buf_init(connection.loop.readBuffer, UInt32(EventLoop.readBufferSize))
        }, { stream, count, buffer in
            let connection = TCPConnection.owner(stream!.pointee.data)
            if count > 0 {
                let bytes = UnsafeRawBufferPointer(start: buffer!.pointee.base, count: count)
                connection.received(Array(bytes))
            } else if count < 0 {
                uv_read_stop(stream)
                let end: EndOfInput = count == Int(UV_EOF.rawValue) ? .eof : .failed(String(cString: uv_strerror(Int32(count))))
                connection.endInput(end)
            }
        })
    }

    private func received(_ bytes: [UInt8]) {
        guard let security else { return onData?(bytes) ?? () }
        do {
            let plaintext = try security.open(bytes)
            scheduleFlush()
            if !plaintext.isEmpty { onData?(plaintext) }
            if security.peerFinished { endInput(.eof) }
        } catch {
            // Whatever the layer has to say (an alert) goes out before the socket closes.
            output.removeAll()
            let alert = error.reply.isEmpty ? security.takeOutput() : error.reply
            self.security = nil
            if !alert.isEmpty {
                write(alert)
                closeAfterWriting()
            }
            endInput(.failed(error.description))
            close()
        }
    }

    private func endInput(_ end: EndOfInput) {
        guard !inputEnded else { return }
        inputEnded = true
        onEnd?(end)
    }

    /// A write the kernel refused (EPIPE, ECONNRESET): the peer is gone, so this connection
    /// ends here; the rest of the process goes on.
    private func writeFailed(_ status: Int32) {
        guard !closing else { return }
        endInput(.failed("write: " + String(cString: uv_strerror(status))))
        close()
    }

    /// Stops reading (backpressure); `startReading()` resumes.
    public func stopReading() {
        guard !closing else { return }
        uv_read_stop(stream)
    }

    /// Bytes accepted by `write` that the kernel has not taken yet.
    public var pendingOutputBytes: Int { output.count + bytesInFlight }

    /// Whether `close()` or `closeAfterWriting()` has been called.
    public var isClosing: Bool { closing || shutdownRequested }

    /// Queues bytes; they go out, coalesced with others, before the loop next sleeps.
    public func write(_ bytes: some Sequence<UInt8>) {
        guard !closing, !shutdownRequested else { return }
        output.append(Array(bytes))
        scheduleFlush()
    }

    // Concrete overloads: the generic one is not specialised across modules and copies byte
    // by byte through type metadata, which showed at ~15 % of a fan-out's server time.

    /// Queues bytes (one copy, no per-byte work).
    public func write(_ bytes: [UInt8]) {
        guard !closing, !shutdownRequested else { return }
        output.append(bytes)
        scheduleFlush()
    }

    /// Queues bytes (one copy, no per-byte work).
    public func write(_ bytes: ArraySlice<UInt8>) {
        guard !closing, !shutdownRequested else { return }
        output.append(bytes)
        scheduleFlush()
    }

    /// Queues a string's UTF-8 bytes.
    public func write(_ text: String) {
        guard !closing, !shutdownRequested else { return }
        output.append(text)
        scheduleFlush()
    }

    /// Queues `range` of bytes that other connections send too: a reference, no copy (unless
    /// a TLS layer must seal them for this connection).
    public func write(_ shared: SharedBytes, range: Range<Int>) {
        guard !closing, !shutdownRequested, !range.isEmpty else { return }
        output.append(shared, range: range)
        scheduleFlush()
    }

    private func scheduleFlush() {
        if !flushScheduled {
            flushScheduled = true
            loop.scheduleFlush(self)
        }
    }

    /// Drops output that was queued but not yet handed to the kernel.
    public func discardUnflushedOutput() {
        output.removeAll()
    }

    func flush() {
        flushScheduled = false
        guard !closing else { return }
        if let security {
            do {
                // Sealed for this connection alone: the shared bytes are copied into it.
                let plaintext = output.takeAll()
                if !plaintext.isEmpty { try security.seal(plaintext) }
                output.replaceOutbox(with: security.takeOutput())
            } catch {
                discardUnflushedOutput()
                endInput(.failed(error.description))
                return close()
            }
        }
        var tried = false
        if output.segments.isEmpty, bytesInFlight == 0, !output.outbox.isEmpty {
            // Fast path (replies): the kernel usually takes everything at once, with no copy.
            tried = true
            let written = output.outbox.withUnsafeBytes { raw -> Int in
                // libuv only reads the buffer it is given.
                var buffer = uv_buf_init(UnsafeMutableRawPointer(mutating: raw.baseAddress!).assumingMemoryBound(to: CChar.self), UInt32(raw.count))
                return Int(uv_try_write(stream, &buffer, 1))
            }
            if written > 0 {
                output.outboxSent(written)
                if output.isEmpty { return onDrain?() ?? () }
            } else if written < 0, written != Int(UV_EAGAIN.rawValue) {
                discardUnflushedOutput()
                writeFailed(Int32(written))
                return
            }
        }
        output.seal()
        guard !output.segments.isEmpty else { return }
        if bytesInFlight == 0, !tried {
            // Shared bytes and replies in one writev.
            let written = withBuffers(output.segments) { buffers in Int(uv_try_write(stream, buffers.baseAddress, UInt32(buffers.count))) }
            if written > 0 {
                output.dropFirst(written)
            } else if written < 0, written != Int(UV_EAGAIN.rawValue) {
                discardUnflushedOutput()
                writeFailed(Int32(written))
                return
            }
        }
        // The rest waits in write requests that hold the bytes until they are done: about
        // `maxBytesInFlight` at a time, ending at a line, so that what libuv has not taken yet
        // can be dropped whole lines at a time (`closeAfterWriting(replacingUnsentWith:)`). A
        // TLS layer's records, and a closing connection's last bytes, go whole.
        let whole = security != nil || shutdownRequested
        if !output.segments.isEmpty, whole || bytesInFlight < Self.maxBytesInFlight {
            let queued = output.segmentBytes
            let segments = whole ? output.takeSegments() : output.takeSegments(endingAtALineWithin: Self.maxBytesInFlight - bytesInFlight)
            let box = WriteBox(segments, count: queued - output.segmentBytes)
            bytesInFlight += box.count
            let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
            request.pointee.data = Unmanaged.passRetained(box).toOpaque()
            let result = withBuffers(box.segments) { buffers in
                uv_write(request, stream, buffers.baseAddress, UInt32(buffers.count)) { request, status in
                    let box = Unmanaged<WriteBox>.fromOpaque(request!.pointee.data).takeRetainedValue()
                    let connection = TCPConnection.owner(request!.pointee.handle.pointee.data)
                    request!.deallocate()
                    connection.bytesInFlight -= box.count
                    if status < 0 {
                        connection.writeFailed(status)
                    } else if connection.pendingOutputBytes == 0 {
                        connection.onDrain?()
                    } else if !connection.output.isEmpty {
                        connection.flush()
                    }
                }
            }
            if result < 0 {
                bytesInFlight -= box.count
                Unmanaged<WriteBox>.fromOpaque(request.pointee.data).release()
                request.deallocate()
                writeFailed(result)
                return
            }
        }
        if pendingOutputBytes == 0 { onDrain?() }
    }

    /// libuv's buffer list for `segments` (libuv copies the list; the bytes must outlive the write).
    private func withBuffers<Result>(_ segments: [(bytes: SharedBytes, range: Range<Int>)], _ body: (UnsafeMutableBufferPointer<uv_buf_t>) -> Result) -> Result {
        // At most IOV_MAX buffers go to the kernel at once; libuv writes the rest after.
        var buffers = segments.map { segment in
            uv_buf_init((segment.bytes.base + segment.range.lowerBound).assumingMemoryBound(to: CChar.self), UInt32(segment.range.count))
        }
        return buffers.withUnsafeMutableBufferPointer { body($0) }
    }

    /// Sends what is queued, then half-closes and closes: the way to deliver a last `* BYE`.
    /// A peer that has not taken the bytes within `graceMilliseconds` (it stopped reading) is
    /// cut off, so a dropped client never holds its socket and buffers for ever.
    public func closeAfterWriting(graceMilliseconds: UInt64 = defaultCloseGraceMilliseconds) {
        guard !closing, !shutdownRequested else { return }
        // Set before flushing: a flush that drains calls `onDrain`, whose handler may ask to
        // close after writing again; that call must find this one under way, or it starts a
        // second shutdown whose grace timer nothing cancels.
        shutdownRequested = true
        if let security {
            flush()
            security.finish()
        }
        flush()
        guard !closing else { return }
        let timer = LoopTimer(loop: loop)
        timer.start(after: graceMilliseconds) { [unowned self] in close() }
        graceTimer = timer
        uv_read_stop(stream)
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let result = uv_shutdown(request, stream) { request, _ in
            let connection = TCPConnection.owner(request!.pointee.handle.pointee.data)
            request!.deallocate()
            connection.close()
        }
        if result < 0 {
            request.deallocate()
            close()
        }
    }

    /// Drops what is queued and not yet handed to libuv (whole lines: what libuv holds ends at
    /// a line), queues `lastLine` instead, makes room for it in the kernel's send buffer, and
    /// closes after writing: a peer that stopped reading finds `lastLine` after the last whole
    /// line the kernel and libuv held, whenever it reads again, even once the socket is closed.
    /// Over TLS nothing can be dropped (what is queued is sealed): false, and nothing is done.
    public func closeAfterWriting(replacingUnsentWith lastLine: [UInt8]) -> Bool {
        guard security == nil, !closing, !shutdownRequested else { return false }
        output.removeAll()
        output.append(lastLine)
        var size: Int32 = 0
        if uv_send_buffer_size(asHandle(handle), &size) == 0, size > 0 {
            // Linux reports twice what was asked for, and doubles what it is asked for.
            var larger = Int32(clamping: Int(size) / 2 + Self.lastLineRoom)
            uv_send_buffer_size(asHandle(handle), &larger)
        }
        closeAfterWriting()
        return true
    }

    /// Closes now; queued writes not yet sent are cancelled.
    public func close() {
        guard !closing else { return }
        closing = true
        discardUnflushedOutput()
        graceTimer?.close()
        graceTimer = nil
        uv_close(asHandle(handle)) { handle in
            let connection = Unmanaged<TCPConnection>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            connection.handle.deallocate()
            let onClose = connection.onClose
            connection.onData = nil
            connection.onEnd = nil
            connection.onDrain = nil
            connection.onClose = nil
            onClose?()
        }
    }
}
