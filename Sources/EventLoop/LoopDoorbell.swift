import CLibUV
import Synchronization

/// Lets another thread ask a loop to do something: `ring()` from any thread runs the action on
/// the loop thread at its next turn (rings before then are one call). How a test stops a
/// server or an agent running on a loop thread of its own, as a signal stops the process.
///
/// Made before the loop runs or on its thread; `close()` on the loop thread. Like a signal
/// watcher, it does not keep the loop running by itself.
public final class LoopDoorbell: @unchecked Sendable {
    private let handle: UnsafeMutablePointer<uv_async_t>
    private let action: () -> Void
    /// Whether the handle is closed; `ring` checks it under the lock, so it never sends on a
    /// closed handle.
    private let closed = Mutex(false)

    public init(loop: EventLoop, _ action: @escaping () -> Void) {
        self.action = action
        handle = .allocate(capacity: 1)
        uv_async_init(loop.raw, handle) { handle in
            Unmanaged<LoopDoorbell>.fromOpaque(handle!.pointee.data).takeUnretainedValue().action()
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_unref(asHandle(handle))
    }

    /// Thread-safe; does nothing once closed.
    public func ring() {
        closed.withLock { closed in
            if !closed { uv_async_send(handle) }
        }
    }

    public func close() {
        let wasOpen = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard wasOpen else { return }
        uv_close(asHandle(handle)) { handle in
            let doorbell = Unmanaged<LoopDoorbell>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            doorbell.handle.deallocate()
        }
    }
}
