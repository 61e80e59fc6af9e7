/// What a session asks of the connection it talks over, in the order it asks.
enum SessionAction: Equatable {
    /// Whole reply or notice lines.
    case send(String)
    /// Change lines encoded once for every subscriber.
    case sendBytes(ArraySlice<UInt8>)
    /// Stop taking the client's bytes until `resumeReading` (back-pressure).
    case pauseReading
    case resumeReading
    /// End the connection: once what was sent has gone out, or at once (the socket failed).
    case close(afterSending: Bool)
}

/// The connection a session talks over: a TCP or TLS socket when serving, a buffer in tests.
/// It hands the client's bytes, the end of its input, output drains and the final close to the
/// session's input methods, and carries out the session's actions; the session never sees a
/// socket.
protocol SessionTransport: AnyObject {
    /// The client's address, for logs.
    var peerHost: String? { get }
    /// Bytes sent and not yet taken by the client.
    var pendingOutputBytes: Int { get }
    /// Starts feeding `session`'s input methods.
    func attach(_ session: Session)
    func perform(_ action: SessionAction)
}
