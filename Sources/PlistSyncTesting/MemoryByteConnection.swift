import EventLoop
import ServerKit

/// A connection's bytes in memory, for a line-protocol session or an HTTP connection alike:
/// what the server writes collects in `output` for the client to take, what the client sends
/// (`receive`) goes to the connection's `onData`, held while the server does not read; a close
/// is seen at the end of the server's turn. The test kit's one byte transport.
public final class MemoryByteConnection: ByteConnection {
    public var onData: (([UInt8]) -> Void)?
    public var onEnd: ((TCPConnection.EndOfInput) -> Void)?
    public var onDrain: (() -> Void)?
    public var onClose: (() -> Void)?
    public var peerHost: String? { "memory" }
    /// Bytes the client has not taken: none unless a test says so (a client that stopped
    /// reading, for the memory budget to count).
    public var pendingOutputBytes = 0
    /// What the server wrote and the client has not taken yet.
    public var output: [UInt8] = []
    /// Whether the server closed the connection (seen once the loop turned after it did).
    public private(set) var isClosed = false
    private var closing = false
    private var reading = false
    private var unread: [UInt8] = []
    private let atEndOfTurn: (@escaping () -> Void) -> Void

    /// For a server on `clock` (a close is seen at the end of its turn).
    public init(clock: any ServerClock) {
        atEndOfTurn = clock.atEndOfTurn
    }

    public func write(_ bytes: [UInt8]) {
        guard !closing else { return }
        output += bytes
    }

    public func write(_ text: String) {
        write(Array(text.utf8))
    }

    public func write(_ shared: SharedBytes, range: Range<Int>) {
        write(shared[range])
    }

    public func startReading() {
        reading = true
        guard !unread.isEmpty else { return }
        let bytes = unread
        unread = []
        onData?(bytes)
    }

    public func stopReading() {
        reading = false
    }

    public func closeAfterWriting() {
        close()
    }

    /// Everything written is the client's already (`output`): nothing to drop, and the last
    /// line was written with it.
    public func closeAfterWriting(replacingUnsentWith lastLine: [UInt8]) -> Bool {
        close()
        return true
    }

    public func close() {
        guard !closing else { return }
        closing = true
        atEndOfTurn { [self] in
            isClosed = true
            let onClose = onClose
            self.onData = nil
            self.onEnd = nil
            self.onDrain = nil
            self.onClose = nil
            onClose?()
        }
    }

    /// The client closes its end: the server reads the end of its input, or with `reset` a
    /// failed read (a network that dropped the connection).
    public func hangUp(reset: Bool = false) {
        guard !closing else { return }
        onEnd?(reset ? .failed("connection reset by peer") : .eof)
    }

    /// The client sends `bytes` (held while the server does not read).
    public func receive(_ bytes: [UInt8]) {
        guard !closing else { return }
        if reading { onData?(bytes) } else { unread += bytes }
    }
}
