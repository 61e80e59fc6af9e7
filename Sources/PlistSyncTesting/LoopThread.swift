import Dispatch
import Foundation

/// A thread of its own for one event loop, so a test can run a real server or agent inside its
/// process (real sockets, files and inotify, no `exec`) and go on talking to it from the test's
/// thread. `body` makes nothing it shares: what it needs is built before and handed over.
public final class LoopThread: @unchecked Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let askToStop: @Sendable () -> Void

    /// Starts `body` (typically `loop.run()`) on a new thread; `stop` asks it, from any
    /// thread, to return (rings the loop's doorbell).
    public init(name: String, stop: @escaping @Sendable () -> Void, _ body: @escaping @Sendable () -> Void) {
        askToStop = stop
        let thread = Thread { [finished] in
            body()
            finished.signal()
        }
        thread.name = name
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Asks `body` to return and waits up to `seconds` for it; false when it did not.
    public func stop(waitingUpTo seconds: Double) -> Bool {
        askToStop()
        return finished.wait(timeout: .now() + seconds) == .success
    }
}

/// Hands a loop-thread object to the thread that will run its loop (it is used there only,
/// after the hand-over).
public struct HandedOver<Value>: @unchecked Sendable {
    public let value: Value

    public init(_ value: Value) {
        self.value = value
    }
}

/// Lines kept by a server or agent running on a loop thread, read by the test's thread.
public final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var text: [UInt8] = []

    public init() {}

    public func append(_ line: String) {
        lock.lock()
        text += Array((line.hasSuffix("\n") ? line : line + "\n").utf8)
        lock.unlock()
    }

    /// How many bytes were kept so far: where the next line will begin.
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return text.count
    }

    public var all: String { since(0) }

    /// The lines from byte `start` on (a `count` read before).
    public func since(_ start: Int) -> String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: text[min(start, text.count)...], as: UTF8.self)
    }
}
