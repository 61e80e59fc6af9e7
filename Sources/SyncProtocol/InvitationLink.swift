import Foundation

/// An invitation's link, `<scheme>://<host>[:<port>]/join#s=<secret>&p=<line port>[&f=<fingerprint>]`:
/// the console's join page, and in the fragment (never sent by a browser, so never logged)
/// the secret, the port of the line protocol and the SHA-256 fingerprint of the server's
/// certificate to pin. Made by the server, read by `plistsync join`.
public struct InvitationLink: Equatable, Sendable {
    public var isSecure: Bool
    /// The host as the link names it (an IPv6 address without its brackets).
    public var host: String
    public var httpPort: Int?
    public var secret: String
    public var linePort: Int
    /// Lowercase hex; nil for a server without TLS.
    public var fingerprint: String?

    public init(isSecure: Bool, host: String, httpPort: Int?, secret: String, linePort: Int, fingerprint: String?) {
        (self.isSecure, self.host, self.httpPort, self.secret, self.linePort, self.fingerprint) = (isSecure, host, httpPort, secret, linePort, fingerprint)
    }

    /// The link's text, `authority` the host and port as the browser reached the server.
    public static func text(isSecure: Bool, authority: String, secret: String, linePort: Int?, fingerprint: String?) -> String {
        var fragment = "s=\(secret)"
        if let linePort { fragment += "&p=\(linePort)" }
        if let fingerprint { fragment += "&f=\(fingerprint)" }
        return "\(isSecure ? "https" : "http")://\(authority)/join#\(fragment)"
    }

    /// Why a link could not be read, in words for the person who pasted it.
    public struct Unreadable: Error, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(Unreadable) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let scheme: String
        if trimmed.lowercased().hasPrefix("https://") {
            scheme = "https://"
            isSecure = true
        } else if trimmed.lowercased().hasPrefix("http://") {
            scheme = "http://"
            isSecure = false
        } else {
            throw Unreadable(description: "an invitation link starts with https:// (or http://)")
        }
        let rest = trimmed.dropFirst(scheme.count)
        guard let hash = rest.firstIndex(of: "#") else { throw Unreadable(description: "the link has no #… part: copy it whole") }
        let beforeFragment = rest[..<hash]
        guard let slash = beforeFragment.firstIndex(of: "/"), beforeFragment[slash...] == "/join" else {
            throw Unreadable(description: "this is not an invitation link (its path is not /join)")
        }
        let authority = String(beforeFragment[..<slash])
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            httpPort = after.hasPrefix(":") ? Int(after.dropFirst()) : nil
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            httpPort = Int(authority[authority.index(after: colon)...])
        } else {
            host = authority
            httpPort = nil
        }
        guard !host.isEmpty else { throw Unreadable(description: "the link names no host") }
        var values: [String: String] = [:]
        for pair in rest[rest.index(after: hash)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        guard let secret = values["s"], InvitationSecret.isWellFormed(secret) else {
            throw Unreadable(description: "the link's secret is missing or cut short: copy the link whole")
        }
        guard let port = values["p"].flatMap({ Int($0) }), (1...65_535).contains(port) else {
            throw Unreadable(description: "the link does not say the server's sync port (p=…)")
        }
        if let fingerprint = values["f"] {
            guard Names.isLowercaseHex(fingerprint, length: 64) else {
                throw Unreadable(description: "the link's certificate fingerprint (f=…) is not 64 hex digits")
            }
            self.fingerprint = fingerprint
        } else {
            fingerprint = nil
        }
        self.secret = secret
        linePort = port
    }
}
