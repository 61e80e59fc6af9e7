import EventLoop
import TLSKit
import Foundation
import SyncProtocol

/// A load-generator client connection: sends lines, hands back received lines.
final class BenchConnection {
    let connection: TCPConnection
    private var framer = LineFramer(maxLineBytes: 4 << 20)
    var onLine: (String) -> Void = { _ in }
    var onClosed: () -> Void = {}

    init(_ connection: TCPConnection) {
        self.connection = connection
        // The connection owns its client until it closes (close() drops these closures).
        connection.onData = { [self] bytes in
            framer.append(bytes)
            while let line = try? framer.nextLine() { onLine(String(decoding: line, as: UTF8.self)) }
        }
        connection.onEnd = { [self] _ in
            onClosed()
            connection.close()
        }
        connection.startReading()
    }

    func send(_ line: String) {
        connection.write(line)
        connection.write(CollectionOfOne(0x0A))
    }

    /// Connects, says HELLO and logs in, then calls `ready` (nil on failure).
    static func open(
        loop: EventLoop, target: BenchTarget, ready: @escaping (BenchConnection?) -> Void
    ) {
        TCPConnection.connect(on: loop, to: target.address) { result in
            guard case .success(let tcp) = result else { return ready(nil) }
            if let tls = target.tls {
                guard (try? tls.secure(tcp, host: target.address.host)) != nil else {
                    tcp.close()
                    return ready(nil)
                }
            }
            let client = BenchConnection(tcp)
            client.onLine = { [unowned client] line in
                if line.hasPrefix("a OK AUTH") {
                    client.onLine = { _ in }
                    ready(client)
                } else if line.hasPrefix("a ERR") {
                    ready(nil)
                }
            }
            client.send("h HELLO 1 bench")
            client.send("a AUTH \(ResponseLine.argument(target.user)) \(ResponseLine.argument(target.password))")
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
