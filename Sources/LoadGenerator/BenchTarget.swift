import EventLoop
import Foundation
import SyncClient
import SyncCore
import SyncProtocol
import TLSKit

extension BenchTarget {
    /// Connects to this target, says HELLO and logs in, then calls `ready` (nil on failure).
    func open(on loop: EventLoop, ready: @escaping (ClientConnection?) -> Void) {
        ClientConnection.connect(on: loop, to: address, tls: tls) { [user, password] result in
            guard case .success(let client) = result else { return ready(nil) }
            client.logIn(client: "bench", with: .auth(user: user, password: password)) { event in
                guard case .ok = event else {
                    client.close()
                    return ready(nil)
                }
                ready(client)
            }
        }
    }
}

/// Where the load goes, and as whom.
public struct BenchTarget: Sendable {
    public var address: SocketAddress
    public var user: String
    public var password: String
    /// TLS to the server (`bench --tls`).
    public var tls: TLSContext?
    /// Servers sharing one store with `address` (`--server a,b,c`): put spreads its connections
    /// over all of them; fan-out's writer talks to `address` and its subscribers to the others,
    /// so every delivery crosses from one node to another.
    public var otherNodes: [SocketAddress] = []

    public init(address: SocketAddress, user: String, password: String, tls: TLSContext? = nil) {
        self.address = address
        self.user = user
        self.password = password
        self.tls = tls
    }

    /// The target of connection number `index`: the nodes in turn.
    func spread(_ index: Int) -> BenchTarget {
        let nodes = [address] + otherNodes
        var one = self
        one.address = nodes[index % nodes.count]
        one.otherNodes = []
        return one
    }

    /// Where fan-out's subscribers go: the nodes other than the writer's, when there are any.
    var subscriberNodes: BenchTarget {
        guard let first = otherNodes.first else { return self }
        var others = self
        others.address = first
        others.otherNodes = Array(otherNodes.dropFirst())
        return others
    }
}
