/// The connection a session talks over: a TCP or TLS socket when serving, a buffer in tests.
/// It hands the client's bytes, the end of its input, output drains and the final close to the
/// session's input methods, and carries out the session's connection actions; the session
/// never sees a socket.
protocol SessionTransport: AnyObject {
    /// The client's address, for logs.
    var peerHost: String? { get }
    /// Bytes sent and not yet taken by the client.
    var pendingOutputBytes: Int { get }
    /// Bytes the connection read and holds outside the session (an HTTP connection's requests
    /// waiting their turn); the memory budget counts them.
    var heldInputBytes: Int { get }
    /// Starts feeding `session`'s input methods.
    func attach(_ session: Session)
    /// Carries out `send`, `deliver`, `pauseReading`, `resumeReading`, `close` and
    /// `closeNow` (the server carries out the rest).
    func carryOut(_ action: SessionAction)
}

extension SessionTransport {
    /// A connection that hands every byte to its session at once holds none.
    var heldInputBytes: Int { 0 }
}
