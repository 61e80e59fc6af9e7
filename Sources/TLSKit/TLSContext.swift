import CTLS
import Foundation

/// The TLS settings shared by a listener's or a client's sessions: a server's certificate and
/// key, or how a client checks the server (a CA, the system's CAs, or a pinned fingerprint).
public final class TLSContext: @unchecked Sendable {
    let raw: OpaquePointer
    /// Client side: the SHA-256 fingerprint (lowercase hex) the server's certificate must have.
    public let pinnedFingerprint: String?
    let isServer: Bool

    private init(raw: OpaquePointer, pinnedFingerprint: String?, isServer: Bool) {
        self.raw = raw
        self.pinnedFingerprint = pinnedFingerprint
        self.isServer = isServer
    }

    deinit { plistsync_tls_context_free(raw) }

    /// A server context from PEM files.
    /// The suites offered, OpenSSL's names: TLS 1.2 (ECDHE with AEAD only) and TLS 1.3.
    public static let offeredSuites = (tls12: PLISTSYNC_TLS12_CIPHERS.split(separator: ":").map(String.init),
                                       tls13: PLISTSYNC_TLS13_CIPHERSUITES.split(separator: ":").map(String.init))

    public static func server(certificate: String, key: String) throws(TLSError) -> TLSContext {
        let raw = try withError { plistsync_tls_server_context(certificate, key, $0, $1) }
        return TLSContext(raw: raw, pinnedFingerprint: nil, isServer: true)
    }

    /// How a client decides to trust a server.
    public enum Trust: Equatable, Sendable {
        /// The certificate's chain leads to the system's CAs.
        case systemCAs
        /// The chain leads to the certificates in this PEM file (a self-signed server's own).
        case authority(String)
        /// The certificate has this SHA-256 fingerprint, whoever signed it.
        case fingerprint(String)
        /// Anything, the fingerprint recorded for the user to confirm (`login`'s first use).
        case firstUse
    }

    public static func client(trusting trust: Trust) throws(TLSError) -> TLSContext {
        let raw: OpaquePointer
        switch trust {
        case .systemCAs: raw = try withError { plistsync_tls_client_context(nil, 1, $0, $1) }
        case .authority(let path): raw = try withError { plistsync_tls_client_context(path, 1, $0, $1) }
        case .fingerprint, .firstUse: raw = try withError { plistsync_tls_client_context(nil, 0, $0, $1) }
        }
        var pin: String?
        if case .fingerprint(let text) = trust {
            guard let normalized = Fingerprint.normalized(text) else {
                throw TLSError("a fingerprint is 64 hex digits (colons allowed), not \(text)")
            }
            pin = normalized
        }
        return TLSContext(raw: raw, pinnedFingerprint: pin, isServer: false)
    }

    private static func withError(_ make: (UnsafeMutablePointer<CChar>, Int) -> OpaquePointer?) throws(TLSError) -> OpaquePointer {
        var message = [CChar](repeating: 0, count: 512)
        let raw = message.withUnsafeMutableBufferPointer { make($0.baseAddress!, $0.count) }
        guard let raw else { throw TLSError(errorText(message)) }
        return raw
    }
}

/// A TLS failure in words for the user.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// SHA-256 certificate fingerprints as people read them: `AB:CD:…` (32 bytes).
public enum Fingerprint {
    public static func text(_ digest: [UInt8]) -> String {
        digest.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// Lowercase hex without separators, or nil when `text` is not 32 bytes of hex.
    public static func normalized(_ text: String) -> String? {
        let hex = text.filter { $0 != ":" && $0 != " " }.lowercased()
        guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else { return nil }
        return hex
    }

    /// The fingerprint of the certificate in a PEM file.
    public static func ofCertificate(at path: String) -> String? {
        var digest = [UInt8](repeating: 0, count: 32)
        guard plistsync_tls_file_fingerprint(path, &digest) == 1 else { return nil }
        return text(digest)
    }
}

/// Self-signed certificates for a server started with `--tls` and no certificate.
public enum SelfSigned {
    /// Writes a certificate for `name` (plus localhost and the loopback addresses) valid for
    /// `days` days from `startingInDays` days from now, and its key (0600).
    public static func make(certificate: String, key: String, name: String, days: Int = 3650, startingInDays: Int = 0) throws(TLSError) {
        var message = [CChar](repeating: 0, count: 512)
        let made = message.withUnsafeMutableBufferPointer {
            plistsync_tls_make_self_signed(certificate, key, name, startingInDays, days, $0.baseAddress!, $0.count)
        }
        guard made == 1 else { throw TLSError(errorText(message)) }
    }
}

/// The text OpenSSL left in a C buffer (up to its terminating zero).
func errorText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
