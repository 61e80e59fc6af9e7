import EventLoop

/// A connection's bytes, whatever carries them: a TCP (or TLS) socket when serving, a pair of
/// buffers in tests, so an HTTP connection runs the same in memory as over the network. Its
/// callbacks run on the loop thread; `onClose` comes once, after the last of the others.
public protocol ByteConnection: AnyObject {
    var onData: (([UInt8]) -> Void)? { get set }
    var onEnd: ((TCPConnection.EndOfInput) -> Void)? { get set }
    var onDrain: (() -> Void)? { get set }
    var onClose: (() -> Void)? { get set }
    /// The client's address, for logs.
    var peerHost: String? { get }
    /// Bytes written and not yet taken by the client.
    var pendingOutputBytes: Int { get }
    func write(_ bytes: [UInt8])
    func write(_ text: String)
    /// Queues bytes other connections send too, without a copy.
    func write(_ shared: SharedBytes, range: Range<Int>)
    func startReading()
    func stopReading()
    /// Sends what is queued, then closes (a client that does not read is cut off after a grace).
    func closeAfterWriting()
    /// Drops what is queued and not yet on its way (whole lines), sends `lastLine` after what
    /// is, and closes; false when nothing can be dropped (TLS), and nothing was done.
    func closeAfterWriting(replacingUnsentWith lastLine: [UInt8]) -> Bool
    /// Closes now; what is queued is dropped.
    func close()
}

extension TCPConnection: ByteConnection {
    public var peerHost: String? { peer?.host }

    public func closeAfterWriting() {
        closeAfterWriting(graceMilliseconds: Self.defaultCloseGraceMilliseconds)
    }
}
