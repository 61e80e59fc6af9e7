/// A layer between a connection's socket and its users (TLS): received bytes go in and come
/// out as plaintext; plaintext to send goes in and comes out sealed. It never blocks and never
/// touches the socket: the connection moves the bytes.
public protocol StreamSecurity: AnyObject {
    /// Bytes from the socket; the plaintext they complete (often none during a handshake).
    /// Throws when the peer cannot be trusted or speaks something else; the connection ends.
    func open(_ received: [UInt8]) throws(StreamSecurityError) -> [UInt8]
    /// Plaintext to send. Held while the handshake runs; sent once it is done.
    func seal(_ plaintext: [UInt8]) throws(StreamSecurityError)
    /// Bytes for the socket (sealed data, handshake messages, alerts), taken once.
    func takeOutput() -> [UInt8]
    /// Queues the orderly end of the session (a close_notify alert).
    func finish()
    /// Whether the peer ended the session in order.
    var peerFinished: Bool { get }
}

/// Why a secured stream ended, in words for the user.
public struct StreamSecurityError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// Bytes sent as they are before the socket closes (a plaintext `* BYE` to a client that
    /// did not speak TLS).
    public let reply: [UInt8]

    public init(_ description: String, reply: [UInt8] = []) {
        self.description = description
        self.reply = reply
    }
}
