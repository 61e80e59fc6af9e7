/// Why the server ends a connection, the word after `* BYE`: written by the server (sessions,
/// the listener, the TLS layer) and read by every client from this one type. A word from a
/// newer server reads as a reason of its own (`ByeReason(rawValue:)` takes any word).
public struct ByeReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The server is stopping (SIGTERM/SIGINT).
    public static let shutdown = ByeReason(rawValue: "SHUTDOWN")
    /// A subscriber fell too far behind, or the server's memory budget was short: resume with
    /// SUB … SINCE.
    public static let slow = ByeReason(rawValue: "SLOW")
    /// No complete line for `idle_timeout_seconds`.
    public static let idle = ByeReason(rawValue: "IDLE")
    /// A line over the limit.
    public static let tooLarge = ByeReason(rawValue: "TOO_LARGE")
    /// Not logged in within `preauth_timeout_seconds`.
    public static let authTimeout = ByeReason(rawValue: "AUTH_TIMEOUT")
    /// Too many requests without logging in.
    public static let authRequired = ByeReason(rawValue: "AUTH_REQUIRED")
    /// The server is at a connection limit or short of memory.
    public static let busy = ByeReason(rawValue: "BUSY")
    /// The account, its password or the token was removed or changed.
    public static let revoked = ByeReason(rawValue: "REVOKED")
    /// Plain text on a TLS port.
    public static let tlsRequired = ByeReason(rawValue: "TLS_REQUIRED")

    public var description: String { rawValue }
}
