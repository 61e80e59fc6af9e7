/// The stable error codes of the wire protocol (`TAG ERR CODE text`), listed in PROTOCOL.md.
public enum ErrorCode: String, Sendable, CaseIterable {
    /// The line could not be parsed, or an argument is malformed.
    case badRequest = "BAD_REQUEST"
    /// The verb is not one the server knows.
    case unknownCommand = "UNKNOWN_COMMAND"
    /// A line or record is over its limit.
    case tooLarge = "TOO_LARGE"
    /// The verb needs an authenticated connection.
    case authRequired = "AUTH_REQUIRED"
    /// Wrong user, password or token.
    case authFailed = "AUTH_FAILED"
    /// The user's role on the collection does not allow the verb.
    case forbidden = "FORBIDDEN"
    /// No such collection, record or user.
    case notFound = "NOT_FOUND"
    /// The collection already exists.
    case exists = "EXISTS"
    /// The base revision is stale; the reply carries the server's state.
    case conflict = "CONFLICT"
    /// `SINCE` is older than the oldest kept tombstone: resync from 0.
    case expired = "EXPIRED"
    /// The client speaks a protocol major the server does not.
    case unsupportedVersion = "UNSUPPORTED_VERSION"
    /// Too many requests; try later.
    case rateLimited = "RATE_LIMITED"
    /// The server cannot take the request now (shutting down, overloaded).
    case busy = "BUSY"
    /// The user is at a configured quota (collections owned, bytes stored).
    case quota = "QUOTA"
    /// The server's disk is full; the write was not made and may be retried later.
    case noSpace = "NO_SPACE"
    /// The server's store did not answer in time (a database stalled or out of reach); nothing
    /// was read or written: retry in a moment.
    case unavailable = "UNAVAILABLE"
    /// A fault on the server side; the request may be retried.
    case `internal` = "INTERNAL"

    /// Whether the server refused only for now: the same request may succeed later unchanged
    /// (a full disk freed, a quota raised, load gone), so a client retries it with backoff.
    public var isTemporary: Bool {
        switch self {
        case .rateLimited, .busy, .quota, .noSpace, .unavailable, .internal: true
        default: false
        }
    }
}

/// A request that failed with a wire error code and a human-readable reason.
public struct ProtocolError: Error, Equatable, Sendable {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode: CustomStringConvertible {
    /// The wire spelling (`NOT_FOUND`), as logs and messages show it.
    public var description: String { rawValue }
}
