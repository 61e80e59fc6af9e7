import CLibUV
import Glibc

/// Turns a POSIX signal (SIGINT, SIGTERM) into a callback on the loop thread.
public final class SignalWatcher {
    private let handle: UnsafeMutablePointer<uv_signal_t>
    private let callback: () -> Void
    private var closed = false

    public init(loop: EventLoop, signal: Int32, _ callback: @escaping () -> Void) {
        self.callback = callback
        handle = .allocate(capacity: 1)
        uv_signal_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_signal_start(handle, { handle, _ in
            Unmanaged<SignalWatcher>.fromOpaque(handle!.pointee.data).takeUnretainedValue().callback()
        }, signal)
        // A signal watcher alone should not keep the loop running.
        uv_unref(asHandle(handle))
    }

    public func close() {
        guard !closed else { return }
        closed = true
        uv_close(asHandle(handle)) { handle in
            let watcher = Unmanaged<SignalWatcher>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            watcher.handle.deallocate()
        }
    }
}

/// Signal numbers, so callers need not import Glibc for them.
public enum SignalNumber {
    public static let interrupt = SIGINT
    public static let terminate = SIGTERM
}

/// Process-wide signal dispositions every `plistsync` command sets before it does anything.
public enum ProcessSignals {
    /// Ignores SIGPIPE, so a write to a socket the peer has closed fails with EPIPE on that one
    /// connection instead of killing the whole process (libuv reports the error to the writer).
    public static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }
}
