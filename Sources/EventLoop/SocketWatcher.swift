import CLibUV

/// Calls back on the loop thread whenever a socket owned by someone else (a database
/// library's connection) has bytes to read. The owner reads them; this only watches.
public final class SocketWatcher {
    private let handle: UnsafeMutablePointer<uv_poll_t>
    private let callback: () -> Void
    private var closed = false

    public init(loop: EventLoop, socket: Int32, _ callback: @escaping () -> Void) throws(LoopError) {
        self.callback = callback
        handle = .allocate(capacity: 1)
        let status = uv_poll_init_socket(loop.raw, handle, socket)
        guard status == 0 else {
            handle.deallocate()
            throw LoopError(status, "watch socket \(socket)")
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_poll_start(handle, Int32(UV_READABLE.rawValue)) { handle, _, _ in
            // An error (the peer went away) is reported as readable too: the owner's read says what.
            Unmanaged<SocketWatcher>.fromOpaque(handle!.pointee.data).takeUnretainedValue().callback()
        }
        // Watching alone should not keep the loop running.
        uv_unref(asHandle(handle))
    }

    public func close() {
        guard !closed else { return }
        closed = true
        uv_poll_stop(handle)
        uv_close(asHandle(handle)) { handle in
            let watcher = Unmanaged<SocketWatcher>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            watcher.handle.deallocate()
        }
    }
}
