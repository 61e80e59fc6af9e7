import EventLoop
import SyncCore
import SyncProtocol

/// What the sync engine asks of its server connection: requests with a reply each, and the
/// server's limits. `ServerLink` over TCP when the agent runs; a link to an in-memory server in
/// the simulation tests. Untagged lines (changes, collection events) go the other way, into
/// `SyncEngine.handle`.
protocol ServerRequests: AnyObject {
    /// Logged in: requests are sent (before, they are dropped).
    var isReady: Bool { get }
    /// The server in use (`--server` may name several).
    var server: SocketAddress { get }
    var maxRecordBytes: Int { get }
    var maxLineBytes: Int { get }
    /// Sends a request; `reply` gets its answer. Dropped when not logged in (the engine starts
    /// over from `connected()` on the next login).
    func send(_ command: Command, reply: @escaping (ServerEvent) -> Void)
    /// Drops the connection and logs in again at once.
    func restart()
}

extension ServerRequests {
    /// Sends a request whose answer changes nothing.
    func send(_ command: Command) {
        send(command) { _ in }
    }
}
