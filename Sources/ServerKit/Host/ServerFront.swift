import EventLoop
import SyncCore
import TLSKit

/// A front the host listens for besides the line protocol: the HTTP API and console
/// (`ServerHTTP.HTTPFront`), made by the command that serves and handed its connections
/// through `Server.admit`, so its clients count against the same limits.
public protocol ServerFront: AnyObject {
    /// Listens at `address` on `loop`; `admit` starts TLS and says whether a connection is let in
    /// (and otherwise has written it the refusal of `refuse`).
    func listen(on loop: EventLoop, at address: SocketAddress, admit: @escaping (TCPConnection, (ByeReason) -> [UInt8]) -> Bool) throws(LoopError)
    /// Where it listens, once it does.
    var address: SocketAddress? { get }
    /// Stops listening (shutdown); open connections end with their sessions.
    func close()
}
