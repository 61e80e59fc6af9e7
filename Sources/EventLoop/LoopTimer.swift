import CLibUV

/// A one-shot or repeating timer on the loop.
public final class LoopTimer {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private var callback: (() -> Void)?
    private var closed = false

    public init(loop: EventLoop) {
        handle = .allocate(capacity: 1)
        uv_timer_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Runs `body` once on the loop thread after `milliseconds`, then releases the timer; the
    /// returned timer's `close()` cancels it before then.
    @discardableResult
    public static func once(on loop: EventLoop, after milliseconds: UInt64, _ body: @escaping () -> Void) -> LoopTimer {
        let timer = LoopTimer(loop: loop)
        timer.start(after: milliseconds) {
            timer.close()
            body()
        }
        return timer
    }

    /// Fires `callback` after `milliseconds`, then every `repeatMilliseconds` when that is > 0.
    public func start(after milliseconds: UInt64, repeatEvery repeatMilliseconds: UInt64 = 0, _ callback: @escaping () -> Void) {
        guard !closed else { return }
        self.callback = callback
        uv_timer_start(handle, { handle in
            Unmanaged<LoopTimer>.fromOpaque(handle!.pointee.data).takeUnretainedValue().callback?()
        }, milliseconds, repeatMilliseconds)
    }

    public func stop() {
        guard !closed else { return }
        uv_timer_stop(handle)
    }

    /// Lets the loop exit while this timer is the only thing left.
    public func unref() {
        uv_unref(asHandle(handle))
    }

    /// Stops and releases the timer.
    public func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        uv_close(asHandle(handle)) { handle in
            let timer = Unmanaged<LoopTimer>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            timer.handle.deallocate()
        }
    }
}
