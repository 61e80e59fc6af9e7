import EventLoop
import SyncProtocol

/// Everything `plistsync serve` can be told.
public struct ServerConfiguration: Sendable {
    public var listen = SocketAddress(host: "127.0.0.1", port: 7420)
    public var dataPath = "./plistsync-data"
    public var limits = Limits.standard
    /// Seconds without a byte from a client before it gets `* BYE IDLE`; 0 disables.
    public var idleTimeoutSeconds: UInt64 = 300
    /// Seconds a tombstone is kept; `SINCE` older than a purged one answers `EXPIRED`.
    public var tombstoneTTLSeconds: UInt64 = 30 * 86_400
    /// Seconds a shutdown waits for clients to take their last bytes before cutting them off.
    public var shutdownGraceSeconds: UInt64 = 5

    public init() {}
}

/// Why a connection ended: exactly one per connection, logged once (nats' ClosedState).
enum CloseReason: String {
    case quit, eof, socketError, lineTooLong, idle, slow, shutdown
}
