import SyncCore

/// What a session decides to do, in the order it decides it: its connection's part (send,
/// pause or resume reading, close) and the server's (commit, subscribe). The session returns
/// nothing else to the world; `Session.perform` carries each action out, and a test can watch
/// them by wrapping it.
enum SessionAction {
    /// Whole reply or notice lines.
    case send(String)
    /// Change lines encoded once for every subscriber.
    case sendBytes(ArraySlice<UInt8>)
    /// Stop taking the client's bytes until `resumeReading` (back-pressure).
    case pauseReading
    case resumeReading
    /// Hand `operation` to the group committer; `completion` gets its outcome on the loop.
    case commit(StoreOperation, completion: (Result<StoreOutcome, StoreFailure>) -> Void)
    /// Start or stop receiving a collection's committed changes (`Session.deliver`).
    case subscribe(String)
    case unsubscribe(String)
    /// End the connection for `reason`: once what was sent has gone out (at once after a
    /// socket error).
    case close(CloseReason)
    /// End it at once, sent or not (a client that does not read at shutdown).
    case closeNow
}
