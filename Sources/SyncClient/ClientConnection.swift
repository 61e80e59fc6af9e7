import EventLoop
import SyncCore
import SyncProtocol
import TLSKit

/// One connection to a PlistSync server, the one client type of the agent, the command line and
/// the bench: connects (TLS on it when given a context), sends typed commands under tags and
/// hands each reply to its request's callback and every untagged line to `onUntagged`. Lines
/// come as `ReceivedLine`s, read only as far as the caller asks (the bench counts raw replies;
/// the agent reads events). Loop-thread object.
public final class ClientConnection {
    /// Why a connection could not be made: one line for the user.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public enum Kind: Sendable {
            /// Nothing answered at the address (refused, unreachable, timed out).
            case unreachable
            /// The connection was made but TLS could not be set up on it.
            case tls
        }

        public let kind: Kind
        public let description: String

        public init(_ kind: Kind, _ description: String) {
            self.kind = kind
            self.description = description
        }
    }

    private let tcp: TCPConnection
    private var framer = LineFramer(maxLineBytes: 64 << 20)
    private var replies: [String: (ReceivedLine) -> Void] = [:]
    private var nextTag = 0
    private var failure: String?

    /// Untagged lines (`* CHANGE …`, `* BYE …`).
    public var onUntagged: (ReceivedLine) -> Void = { _ in }
    /// Replies to requests sent with `send(_:tag:)`, which have no callback of their own.
    public var onReply: (ReceivedLine) -> Void = { _ in }
    /// Called before (true) and after (false) the lines of each read, so their effects can
    /// share a transaction.
    public var onBatch: (_ starting: Bool) -> Void = { _ in }
    /// Called once when the connection is gone; the reason when it failed (a reset, TLS).
    public var onClosed: (_ failure: String?) -> Void = { _ in }
    /// When the server was last heard from (loop milliseconds).
    public private(set) var lastHeard: UInt64

    private init(tcp: TCPConnection) {
        self.tcp = tcp
        lastHeard = tcp.loop.nowMilliseconds
        tcp.onData = { [unowned self] bytes in received(bytes) }
        tcp.onEnd = { [unowned self] end in
            if case .failed(let reason) = end { failure = reason }
            tcp.close()
        }
        tcp.onClose = { [self] in
            replies.removeAll()
            onClosed(failure)
            onClosed = { _ in }
            onUntagged = { _ in }
            onReply = { _ in }
        }
        tcp.startReading()
    }

    /// Connects to `server` (TLS when `tls` is given) and hands over the connection.
    public static func connect(
        on loop: EventLoop, to server: SocketAddress, tls: TLSContext?, completion: @escaping (Result<ClientConnection, Failure>) -> Void
    ) {
        TCPConnection.connect(on: loop, to: server) { result in
            switch result {
            case .failure(let error):
                completion(.failure(Failure(.unreachable, "cannot connect to \(server): \(error)")))
            case .success(let tcp):
                if let tls {
                    do {
                        try tls.secure(tcp, host: server.host)
                    } catch {
                        tcp.close()
                        return completion(.failure(Failure(.tls, "\(error)")))
                    }
                }
                completion(.success(ClientConnection(tcp: tcp)))
            }
        }
    }

    /// Sends `command` under a tag of its own; `reply` gets the answer.
    public func send(_ command: Command, reply: @escaping (ReceivedLine) -> Void) {
        nextTag += 1
        let tag = "t\(nextTag)"
        replies[tag] = reply
        tcp.write(tag + " " + command.requestText + "\n")
    }

    /// Sends `command` under `tag`, for pipelined requests answered in order: the replies go
    /// to `onReply`.
    public func send(_ command: Command, tag: String) {
        tcp.write(tag + " " + command.requestText + "\n")
    }

    /// Says HELLO and logs in with `login` (AUTH with a password or a token); `onHello` sees
    /// HELLO's answer (the server id, its limits), `completion` the login's.
    public func logIn(client: String, with login: Command, onHello: @escaping (ServerEvent) -> Void = { _ in },
                      completion: @escaping (ServerEvent) -> Void) {
        send(.hello(version: "1", clientName: client)) { line in onHello(line.reply) }
        send(login) { line in completion(line.reply) }
    }

    /// Hands every byte read from now on to `handler`, unframed (the bench counts deliveries
    /// the way the peer systems' clients do, whatever the protocol).
    public func readRaw(_ handler: @escaping ([UInt8]) -> Void) {
        tcp.onData = { [unowned self] bytes in
            lastHeard = tcp.loop.nowMilliseconds
            handler(bytes)
        }
    }

    /// Says QUIT and closes once everything sent has gone out.
    public func quit() {
        send(.quit, tag: "q")
        tcp.closeAfterWriting()
    }

    /// Closes at once.
    public func close() {
        tcp.close()
    }

    private func received(_ bytes: [UInt8]) {
        lastHeard = tcp.loop.nowMilliseconds
        framer.append(bytes)
        onBatch(true)
        defer { onBatch(false) }
        while let line = try? framer.nextLine() {
            let received = ReceivedLine(bytes: line)
            guard let tag = received.tag else {
                onUntagged(received)
                continue
            }
            if let reply = replies.removeValue(forKey: tag) { reply(received) } else { onReply(received) }
        }
    }
}

/// One line from the server, read as far as its reader needs: the bytes, the text, or what it
/// says.
public struct ReceivedLine: Sendable {
    public let bytes: ArraySlice<UInt8>

    /// The tag it answers; nil for an untagged `*` line.
    var tag: String? {
        guard let space = bytes.firstIndex(of: 0x20) else { return nil }
        let head = bytes[..<space]
        return head.elementsEqual("*".utf8) ? nil : String(decoding: head, as: UTF8.self)
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// What the line says; nil for an untagged line that cannot be read.
    public var event: ServerEvent? { ServerLine.parseAnsweringTag(bytes).map(ServerEvent.init) }

    /// What a tagged line answers (one that cannot be read answers `ERR INTERNAL`).
    public var reply: ServerEvent {
        event ?? .error(tag: tag ?? "", code: .internal, message: "unreadable reply from the server", conflict: nil)
    }
}
