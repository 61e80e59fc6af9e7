import EventLoop
import Foundation
import SyncClient
import SyncCore
import SyncProtocol
import TLSKit

/// A short-lived client for the command line (`login`, `ls`, `get`, `put`, `watch`…): logs in,
/// sends requests one after another, and hands each reply and untagged line to the caller.
public final class ScriptClient {
    /// Why a scripted session failed: one line for the user.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    private let server: SocketAddress
    /// What logs the connection in (AUTH), or the one request that opens it before login
    /// (INVITE PEEK, REDEEM).
    private let opening: Command
    private let tls: TLSContext?

    public convenience init(server: SocketAddress, user: String, credential: AgentConfiguration.Credential, tls: TLSContext? = nil) {
        self.init(server: server, opening: credential.login(user: user), tls: tls)
    }

    /// A client whose first request after HELLO is `opening` (one allowed before login);
    /// `run` hands its OK to `onOpened`.
    public init(server: SocketAddress, opening: Command, tls: TLSContext? = nil) {
        self.server = server
        self.opening = opening
        self.tls = tls
    }

    /// The SHA-256 fingerprint of the server's TLS certificate, seen in a handshake that
    /// trusts anything and sends nothing else (`login` shows it before sending a password).
    public static func serverFingerprint(_ server: SocketAddress) throws -> String {
        let loop = EventLoop()
        var outcome: Result<String, Failure> = .failure(Failure(description: "cannot connect to \(server): is the server running?"))
        let context = try TLSContext.client(trusting: .firstUse)
        TCPConnection.connect(on: loop, to: server) { result in
            guard case .success(let connection) = result else { return }
            do {
                let session = try context.secure(connection, host: server.host)
                session.onHandshake = { fingerprint in
                    outcome = fingerprint.map { .success($0) } ?? .failure(Failure(description: "the server showed no certificate"))
                    connection.close()
                }
            } catch {
                outcome = .failure(Failure(description: "\(error)"))
                return connection.close()
            }
            connection.onEnd = { end in
                if case .failed(let reason) = end { outcome = .failure(Failure(description: reason)) }
                connection.close()
            }
            connection.startReading()
        }
        loop.run()
        loop.close()
        return try outcome.get()
    }

    /// Runs `requests` in order after login. `onUntagged` sees `*` lines; `onReply` sees each
    /// tagged reply and returns whether to go on. With `stayOpen`, it keeps reading after the
    /// last reply until the server closes (for `watch`).
    public func run(
        _ requests: [Command], stayOpen: Bool = false,
        onHello: @escaping (ServerEvent) -> Void = { _ in },
        onOpened: @escaping (ServerEvent) -> Void = { _ in },
        onUntagged: @escaping (String) -> Void = { _ in },
        onReply: @escaping (String, ServerEvent) -> Bool = { _, _ in true }
    ) throws {
        let loop = EventLoop()
        var failure: Failure?
        var queue = requests
        ClientConnection.connect(on: loop, to: server, tls: tls) { [self] result in
            guard case .success(let client) = result else {
                if case .failure(let error) = result {
                    failure = Failure(description: error.kind == .unreachable ? "cannot connect to \(server): is the server running?" : error.description)
                }
                return
            }
            var loggedIn = false
            func sendNext() {
                guard !queue.isEmpty else {
                    if !stayOpen { client.quit() }
                    return
                }
                client.send(queue.removeFirst()) { line in
                    if onReply(line.text, line.reply) { sendNext() } else { client.close() }
                }
            }
            client.onUntagged = { line in
                let text = line.text
                if !loggedIn, text.hasPrefix("* BYE") {
                    failure = Failure(description: "the server refused the connection: \(text.dropFirst(6))")
                }
                onUntagged(text)
            }
            client.onClosed = { reason in
                if let reason, reason.hasPrefix("TLS"), failure == nil { failure = Failure(description: reason) }
                if !loggedIn, failure == nil { failure = Failure(description: "the server closed the connection") }
            }
            client.logIn(client: "plistsync-cli", with: opening, onHello: onHello) { event in
                guard case .ok = event else {
                    if case .error(_, let code, let message, _) = event {
                        let what = switch self.opening {
                        case .auth, .authToken: "login"
                        default: "the server"
                        }
                        failure = Failure(description: "\(what) refused: \(code) \(message)")
                    }
                    return client.close()
                }
                loggedIn = true
                onOpened(event)
                sendNext()
            }
        }
        loop.run()
        loop.close()
        if let failure { throw failure }
    }
}
