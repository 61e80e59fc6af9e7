import EventLoop
import SyncProtocol
import TLSKit
import Foundation
import SyncCore

/// Everything `plistsync agent` is told.
public struct AgentConfiguration: Sendable {
    /// How the agent logs in.
    public enum Credential: Sendable {
        case password(String)
        case token(String)

        /// The AUTH request that logs `user` in with this credential.
        func login(user: String) -> Command {
            switch self {
            case .password(let password): .auth(user: user, password: password)
            case .token(let token): .authToken(token)
            }
        }
    }

    public var server: SocketAddress
    /// Servers sharing one store with `server` (`--server a,b,c`): when the one in use cannot
    /// be reached, the agent moves to the next.
    public var alternateServers: [SocketAddress] = []
    /// Every server to try, in order.
    public var servers: [SocketAddress] { [server] + alternateServers }
    public var user: String
    public var credential: Credential
    /// The file the credential came from: when the server refuses it (a revoked token, a
    /// changed password), the agent stops retrying and waits for this file to change (a new
    /// `plistsync login`).
    public var credentialFile: String?
    /// TLS to the server, and how its certificate is trusted; nil: plaintext.
    public var tls: TLSContext?
    /// The mirrored folder: one subfolder a collection.
    public var directory: String
    /// Only these collections, when set.
    public var collections: Set<String>?
    /// Names this machine in conflict copies.
    public var device: String
    /// Milliseconds a plain modification waits for more writes before it is pushed.
    public var debounceMilliseconds: UInt64 = 15
    /// Seconds between full rescans, the backstop for missed events.
    public var rescanSeconds: UInt64 = 3600
    /// Seconds between keepalive PINGs.
    public var keepaliveSeconds: UInt64 = 30
    /// Days an overwritten local version is kept in `.plistsync/versions`.
    public var keepVersionsDays: Int = 30
    /// More record files than this deleted from one collection within `massDeleteWindowSeconds`
    /// are not deleted on the server until confirmed (`plistsync deletes C --confirm`); 0: never ask.
    public var confirmDeletesOver: Int = 100
    public var massDeleteWindowSeconds: Double = 10

    public init(server: SocketAddress, user: String, credential: Credential, directory: String, device: String) {
        self.server = server
        self.user = user
        self.credential = credential
        self.directory = directory
        self.device = device
    }
}
