import EventLoop
import SyncCore
import SyncProtocol
import TLSKit

/// Everything `plistsync serve` can be told.
public struct ServerConfiguration: Sendable {
    public var listen = SocketAddress(host: "127.0.0.1", port: 7420)
    /// With a context, `listen` speaks only TLS.
    public var tls: TLSContext?
    /// The SHA-256 fingerprint (lowercase hex) of the certificate `tls` presents: invitation
    /// links carry it, so the invitee's client pins it.
    public var certificateFingerprint: String?
    /// A second, plaintext listener (loopback only) next to a TLS one, for local tools.
    public var plaintextListen: SocketAddress?
    /// Where `GET /metrics` answers in the Prometheus text format; nil: nowhere.
    public var metricsListen: SocketAddress?
    /// Where the HTTP/JSON API and the web console answer (HTTPS with `tls`); nil: nowhere.
    public var httpListen: SocketAddress?
    public var dataPath = "./plistsync-data"
    public var limits = Limits.standard
    /// Seconds without a byte from a client before it gets `* BYE IDLE`; 0 disables.
    public var idleTimeoutSeconds: UInt64 = 300
    /// Seconds a tombstone is kept; `SINCE` older than a purged one answers `EXPIRED`.
    public var tombstoneTTLSeconds: UInt64 = 30 * 86_400
    /// Seconds the change log keeps every change (`--history-days`); a record's latest change
    /// is kept as long as the record.
    public var historySeconds: UInt64 = 30 * 86_400
    /// Seconds a shutdown waits for clients to take their last bytes before cutting them off.
    public var shutdownGraceSeconds: UInt64 = 5
    /// Open connections at most; one more is answered `* BYE BUSY` and closed.
    public var maxConnections = 16_384
    /// Connections that have not logged in yet, at most: when one more arrives, the oldest
    /// one not waiting for a login answer is closed (`* BYE BUSY`), so a flood of silent
    /// connections cannot keep a real client from reaching AUTH.
    public var maxUnauthenticated = 1_024
    /// Bytes all connections together may hold (output not yet taken, requests read and not
    /// yet done): past it, connections not logged in are closed first (`* BYE BUSY`), then the
    /// slowest readers (`* BYE SLOW`), largest first, until a quarter of it is free again.
    public var maxBufferedBytes = 256 << 20
    /// The kernel's send buffer per client socket (Linux doubles it); 0 leaves it to the
    /// kernel's autotuning, which lets it grow to `net.ipv4.tcp_wmem`'s maximum (4 MiB): then
    /// each subscriber that stops reading makes the loop copy megabytes into the kernel for
    /// nothing, and every other client waits behind those copies.
    public var socketSendBufferBytes = 256 << 10
    /// Seconds a connection has to log in (HELLO + AUTH) before `* BYE AUTH_TIMEOUT`.
    public var preAuthTimeoutSeconds: UInt64 = 10
    /// Longest line accepted before login: HELLO and AUTH are short.
    public var preAuthMaxLineBytes = 4_096
    /// Collections one (non-admin) user may own; 0 means no limit.
    public var maxCollectionsPerUser = 1_000
    /// Bytes of record fields the collections one user owns may hold; 0 (the default) means no
    /// limit. Charged to the collection's owner, whoever writes.
    public var maxBytesPerUser = 0
    /// Milliseconds a store read may take before the request is answered `UNAVAILABLE` (and
    /// later reads fail at once until the store answers again); also how long writes wait to
    /// be handed to a store whose commit has not come back.
    public var storeTimeoutMilliseconds: UInt64 = 5_000

    /// Whether redeeming an invitation may make a new account (else invitees log in to one
    /// they have): off unless `serve --invitations-make-accounts`.
    public var invitationsMakeAccounts = false
    /// PBKDF2 iterations for passwords set over the wire (USER ADD, USER PASSWD, PASSWD).
    public var passwordIterations = PasswordHasher.defaultIterations

    public init() {}
}

/// Why a connection ended: exactly one per connection, logged once (nats' ClosedState); the
/// ones the server starts say so first with `* BYE` and their `bye` reason.
public enum CloseReason: String, Sendable {
    case quit, eof, socketError, lineTooLong, idle, slow, shutdown
    /// Not logged in within the pre-auth deadline.
    case authTimeout
    /// `Session.preAuthMaxRequests` requests without logging in.
    case authRequired
    /// The server is at `--max-connections`, or this was the oldest connection not logged in
    /// when the pre-auth pool was full, or connections not logged in were shed for memory.
    case busy
    /// Its account, password or token was removed or changed.
    case revoked

    /// The word the client is told; nil when the client ended it (QUIT, EOF) or the socket failed.
    public var bye: ByeReason? {
        switch self {
        case .quit, .eof, .socketError: nil
        case .lineTooLong: .tooLarge
        case .idle: .idle
        case .slow: .slow
        case .shutdown: .shutdown
        case .authTimeout: .authTimeout
        case .authRequired: .authRequired
        case .busy: .busy
        case .revoked: .revoked
        }
    }
}
