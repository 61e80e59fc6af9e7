import SyncCore

/// The connection a session talks over: a TCP or TLS socket when serving, a buffer in tests.
/// It hands the client's bytes, the end of its input, output drains and the final close to the
/// session's input methods, and carries out the session's connection actions; the session
/// never sees a socket.
public protocol SessionTransport: AnyObject {
    /// The client's address, for logs.
    var peerHost: String? { get }
    /// Bytes sent and not yet taken by the client.
    var pendingOutputBytes: Int { get }
    /// Bytes the connection read and holds outside the session (an HTTP connection's requests
    /// waiting their turn); the memory budget counts them.
    var heldInputBytes: Int { get }
    /// Whether LIST and SUB replay pages may come as lines already written (`ServerOutput.lines`)
    /// rather than as values: a byte stream's; the HTTP API reads values.
    var takesEncodedLines: Bool { get }
    /// Starts feeding `session`'s input methods.
    func attach(_ session: Session)
    /// Carries out the connection's part of what the session decided.
    func carryOut(_ action: ConnectionAction)
}

/// The part of a `SessionAction` a session's connection carries out (the server carries out
/// the rest): what the client is sent, whether its input is read, and the close.
public enum ConnectionAction {
    /// A reply or notices, as values: a socket writes their text, the HTTP API reads them.
    case send(ServerOutput)
    /// A broadcast's change lines, encoded once for every subscriber.
    case deliver(ChangeDelivery)
    /// Stop taking the client's bytes until `resumeReading` (back-pressure).
    case pauseReading
    case resumeReading
    /// End the connection for `reason`: once what was sent has gone out (at once after a
    /// socket error).
    case close(CloseReason)
    /// End it at once, sent or not (a client that does not read at shutdown).
    case closeNow
}

extension SessionTransport {
    /// A connection that hands every byte to its session at once holds none.
    public var heldInputBytes: Int { 0 }
    public var takesEncodedLines: Bool { false }
}
