/// Why a connection's bytes are not a request that is served; each has the status code the
/// connection answers with before it closes.
public enum HTTPReadError: Error, Equatable, CustomStringConvertible {
    /// Not HTTP/1.1 as RFC 9112 writes it (the parser's reason).
    case malformed(String)
    /// The request line and headers together pass `HTTPLimits.maxHeaderBytes`, or there are
    /// more than `maxHeaders` of them.
    case headersTooLarge
    /// The body passes `HTTPLimits.maxBodyBytes` (announced by Content-Length, or chunks).
    case bodyTooLarge
    /// A protocol switch (`Upgrade`, `CONNECT`): not spoken here.
    case upgradeRefused

    /// The response status: 400, 431, 413 or 501.
    public var status: Int {
        switch self {
        case .malformed: 400
        case .headersTooLarge: 431
        case .bodyTooLarge: 413
        case .upgradeRefused: 501
        }
    }

    public var description: String {
        switch self {
        case .malformed(let reason): "malformed request: \(reason)"
        case .headersTooLarge: "request headers too large"
        case .bodyTooLarge: "request body too large"
        case .upgradeRefused: "protocol upgrades are not supported"
        }
    }
}

/// The bounds a request must keep.
public struct HTTPLimits: Sendable, Equatable {
    /// Request line plus every header, as sent.
    public var maxHeaderBytes: Int
    public var maxHeaders: Int
    public var maxBodyBytes: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxHeaders: Int = 100, maxBodyBytes: Int = 1 << 20) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaders = maxHeaders
        self.maxBodyBytes = maxBodyBytes
    }
}
