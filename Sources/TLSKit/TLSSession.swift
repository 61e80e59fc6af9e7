import CTLS
import EventLoop

/// One TLS session over a `TCPConnection` (set it as the connection's `security`): OpenSSL
/// with memory buffers, so the handshake and every record run on the loop without blocking.
public final class TLSSession: StreamSecurity {
    private let raw: OpaquePointer
    private let context: TLSContext
    /// Plaintext written before the handshake finished.
    private var held: [UInt8] = []
    private var verified = false
    private var started = false
    public private(set) var peerFinished = false
    /// Called once the handshake is done, with the peer's certificate fingerprint (clients).
    public var onHandshake: ((String?) -> Void)?

    /// What a server answers, in plaintext, to a client that does not start with a TLS record.
    private let plaintextRefusal: [UInt8]

    /// A session for one connection; `host` is the name or address a client dialled (checked
    /// against the certificate when the context verifies chains). A server's session answers
    /// a client that speaks plain text with `plaintextRefusal` (its protocol's goodbye).
    public init(context: TLSContext, host: String? = nil, plaintextRefusal: [UInt8] = []) throws(TLSError) {
        self.plaintextRefusal = plaintextRefusal
        guard let raw = plistsync_tls_new(context.raw, context.isServer ? 1 : 0, host) else { throw TLSError("cannot start a TLS session") }
        self.raw = raw
        self.context = context
    }

    deinit { plistsync_tls_free(raw) }

    /// The SHA-256 fingerprint of the peer's certificate, once the handshake is done.
    public var peerFingerprint: String? {
        var digest = [UInt8](repeating: 0, count: 32)
        guard plistsync_tls_peer_fingerprint(raw, &digest) == 1 else { return nil }
        return Fingerprint.text(digest)
    }

    public var protocolVersion: String { String(cString: plistsync_tls_version(raw)) }

    public func open(_ received: [UInt8]) throws(StreamSecurityError) -> [UInt8] {
        // A TLS client's first byte is a handshake record (0x16); a line-protocol client's is
        // text. It gets an answer it can read instead of a TLS alert.
        if context.isServer, !started, let first = received.first {
            guard first == 0x16 else { throw StreamSecurityError("the client did not speak TLS", reply: plaintextRefusal) }
            started = true
        }
        guard plistsync_tls_feed(raw, received, received.count) == 0 else { throw StreamSecurityError("TLS: out of memory") }
        // Plaintext is never longer than the records it came in plus one OpenSSL held back
        // from before: read into one buffer of that size, not a buffer a record.
        var status = 0
        var plaintext = [UInt8](unsafeUninitializedCapacity: received.count + 17 * 1024) { buffer, count in
            count = 0
            while count < buffer.count {
                status = plistsync_tls_read(raw, buffer.baseAddress! + count, buffer.count - count)
                guard status > 0 else { break }
                count += status
            }
        }
        // Filled to the brim (never seen): what is left comes a record at a time.
        while status > 0 {
            let more = [UInt8](unsafeUninitializedCapacity: 17 * 1024) { buffer, count in
                status = plistsync_tls_read(raw, buffer.baseAddress!, buffer.count)
                count = max(0, status)
            }
            plaintext += more
        }
        if status == -2 { peerFinished = true }
        if status == -1 { throw StreamSecurityError(explained(String(cString: plistsync_tls_error(raw)))) }
        if !verified, plistsync_tls_handshake_done(raw) == 1 {
            verified = true
            try checkPin()
            onHandshake?(peerFingerprint)
            if !held.isEmpty {
                let waiting = held
                held = []
                try seal(waiting)
            }
        }
        return plaintext
    }

    private func checkPin() throws(StreamSecurityError) {
        guard let pin = context.pinnedFingerprint else { return }
        let seen = peerFingerprint
        guard let seen, Fingerprint.normalized(seen) == pin else {
            throw StreamSecurityError("TLS: the server's certificate fingerprint \(seen ?? "(none)") is not the expected one; refusing to talk to it (if the server's certificate was replaced on purpose, log in again to trust the new one)")
        }
    }

    /// OpenSSL's words, with what they usually mean here.
    private func explained(_ reason: String) -> String {
        if reason.contains("wrong version number") || reason.contains("packet length too long") || reason.contains("http request") {
            return context.isServer ? "TLS: the client did not speak TLS" : "TLS: the server did not answer in TLS (a plaintext port? drop --tls)"
        }
        if reason.contains("self-signed") || reason.contains("unable to get local issuer") {
            return reason + "; trust it with --ca CERT.pem or --fingerprint SHA256 (shown when the server starts)"
        }
        return reason
    }

    public func seal(_ plaintext: [UInt8]) throws(StreamSecurityError) {
        guard verified || plistsync_tls_handshake_done(raw) == 1 else { return held += plaintext }
        var offset = 0
        while offset < plaintext.count {
            let written = plaintext.withUnsafeBufferPointer { plistsync_tls_write(raw, $0.baseAddress! + offset, $0.count - offset) }
            guard written > 0 else {
                if written < 0 { throw StreamSecurityError(String(cString: plistsync_tls_error(raw))) }
                held += plaintext[offset...]
                return
            }
            offset += written
        }
    }

    public func takeOutput() -> [UInt8] {
        let pending = plistsync_tls_pending_output(raw)
        guard pending > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
            count = plistsync_tls_take_output(raw, buffer.baseAddress!, buffer.count)
        }
    }

    public func finish() {
        plistsync_tls_shutdown(raw)
    }
}

extension TLSContext {
    /// Puts a new session on a freshly opened connection to `host`, before anything is
    /// written: the connection's bytes are TLS from then on.
    @discardableResult
    public func secure(_ connection: TCPConnection, host: String) throws(TLSError) -> TLSSession {
        let session = try TLSSession(context: self, host: host)
        connection.security = session
        return session
    }
}
