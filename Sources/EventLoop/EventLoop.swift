import CLibUV

/// A libuv event loop and the thread that runs it.
///
/// Every type in this module is loop-bound: create and use it only on the thread that calls
/// `run()`. The one way in from other threads is `runBlocking`'s completion, which libuv delivers
/// back on the loop thread. Output written during one loop turn is coalesced and flushed once,
/// just before the loop sleeps and again after it wakes (uv_prepare / uv_check).
public final class EventLoop {
    let raw: UnsafeMutablePointer<uv_loop_t>
    /// One read buffer shared by every connection: libuv hands it back in the read callback
    /// before the next allocation, so a single buffer suffices on one thread.
    let readBuffer: UnsafeMutablePointer<CChar>
    static let readBufferSize = 64 * 1024

    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    private let check: UnsafeMutablePointer<uv_check_t>
    private var connectionsToFlush: [TCPConnection] = []
    private var endOfTurnWork: [() -> Void] = []
    private var closed = false

    public init() {
        raw = .allocate(capacity: 1)
        uv_loop_init(raw)
        readBuffer = .allocate(capacity: Self.readBufferSize)
        prepare = .allocate(capacity: 1)
        check = .allocate(capacity: 1)
        uv_prepare_init(raw, prepare)
        uv_check_init(raw, check)
        raw.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_prepare_start(prepare) { handle in EventLoop.owner(of: handle!.pointee.loop).flushPendingOutput() }
        uv_check_start(check) { handle in EventLoop.owner(of: handle!.pointee.loop).flushPendingOutput() }
        // Flush hooks must not keep the loop alive by themselves.
        uv_unref(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(prepare)))
        uv_unref(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(check)))
    }

    static func owner(of loop: UnsafeMutablePointer<uv_loop_t>) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(loop.pointee.data).takeUnretainedValue()
    }

    /// Runs until no active handle or request is left, or `stop()` is called.
    public func run() {
        uv_run(raw, UV_RUN_DEFAULT)
    }

    /// Runs one iteration, waiting for events when `wait` is true.
    public func runOnce(wait: Bool = true) {
        uv_run(raw, wait ? UV_RUN_ONCE : UV_RUN_NOWAIT)
    }

    /// Makes `run()` return after the current iteration.
    public func stop() {
        uv_stop(raw)
    }

    /// Milliseconds of the loop's monotonic clock, cached at the start of each iteration.
    public var nowMilliseconds: UInt64 { uv_now(raw) }

    /// A fresh monotonic clock reading in nanoseconds.
    public static func monotonicNanoseconds() -> UInt64 { uv_hrtime() }

    /// Closes the loop's own handles and the loop; false means a handle or request was leaked.
    @discardableResult
    public func close() -> Bool {
        guard !closed else { return true }
        closed = true
        uv_close(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(prepare)), nil)
        uv_close(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(check)), nil)
        uv_run(raw, UV_RUN_NOWAIT)
        let result = uv_loop_close(raw)
        if result == 0 {
            prepare.deallocate()
            check.deallocate()
            readBuffer.deallocate()
            raw.deallocate()
        }
        return result == 0
    }

    /// Runs `work` once, after this loop turn has handled every event that was ready (before
    /// the turn's output is flushed): a way to act on all requests that arrived together. It
    /// always runs before the loop next waits under `run()`; a `runOnce` may return first.
    public func atEndOfTurn(_ work: @escaping () -> Void) {
        endOfTurnWork.append(work)
    }

    /// Hands the output queued so far to the kernel now instead of at the end of the turn.
    public func flushOutputNow() {
        let connections = connectionsToFlush
        connectionsToFlush.removeAll(keepingCapacity: true)
        for connection in connections { connection.flush() }
    }

    func scheduleFlush(_ connection: TCPConnection) {
        connectionsToFlush.append(connection)
    }

    private func flushPendingOutput() {
        while !endOfTurnWork.isEmpty {
            let work = endOfTurnWork
            endOfTurnWork.removeAll(keepingCapacity: true)
            for item in work { item() }
        }
        flushOutputNow()
    }
}

/// A libuv failure: its error number and libuv's text for it.
public struct LoopError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    init(_ code: Int32, _ operation: String) {
        self.code = code
        self.operation = operation
    }

    /// An operation that cannot be done with what it was given (`EINVAL`).
    public static func invalid(_ operation: String) -> LoopError {
        LoopError(UV_EINVAL.rawValue, operation)
    }

    public var description: String {
        "\(operation): \(String(cString: uv_strerror(code)))"
    }

    /// Whether the error is "address already in use".
    public var isAddressInUse: Bool { code == UV_EADDRINUSE.rawValue }
}

func check(_ result: Int32, _ operation: String) throws(LoopError) {
    if result < 0 { throw LoopError(result, operation) }
}

func asHandle<T>(_ pointer: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutablePointer<uv_handle_t>(OpaquePointer(pointer))
}
