import EventLoop
import Foundation
import SyncCore
import SyncProtocol
import TLSKit

/// A short-lived client for the command line (`login`, `ls`, `get`, `put`, `watch`…): logs in,
/// sends requests one after another, and hands each reply and untagged line to the caller.
public final class ScriptClient {
    /// Why a scripted session failed: one line for the user.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private let server: SocketAddress
    private let user: String
    private let credential: AgentConfiguration.Credential
    private let tls: TLSContext?

    public init(server: SocketAddress, user: String, credential: AgentConfiguration.Credential, tls: TLSContext? = nil) {
        self.server = server
        self.user = user
        self.credential = credential
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
        onUntagged: @escaping (String) -> Void = { _ in },
        onReply: @escaping (String, ServerEvent) -> Bool = { _, _ in true }
    ) throws {
        let loop = EventLoop()
        var failure: Failure?
        var queue = requests
        var framer = LineFramer(maxLineBytes: 64 << 20)
        let login: Command = switch credential {
        case .password(let password): .auth(user: user, password: password)
        case .token(let token): .authToken(token)
        }
        TCPConnection.connect(on: loop, to: server) { result in
            guard case .success(let connection) = result else {
                failure = Failure(description: "cannot connect to \(self.server): is the server running?")
                return
            }
            if let tls = self.tls {
                do {
                    try tls.secure(connection, host: self.server.host)
                } catch {
                    failure = Failure(description: "\(error)")
                    return connection.close()
                }
            }
            var loggedIn = false
            func sendNext() {
                guard !queue.isEmpty else {
                    if !stayOpen {
                        connection.write("q " + Command.quit.requestText + "\n")
                        connection.closeAfterWriting()
                    }
                    return
                }
                connection.write("r \(queue.removeFirst().requestText)\n")
            }
            connection.onData = { bytes in
                framer.append(bytes)
                while let raw = try? framer.nextLine() {
                    let text = String(decoding: raw, as: UTF8.self)
                    guard let line = ServerLine.parseAnsweringTag(raw) else { continue }
                    let event = ServerEvent(line)
                    switch line.tag {
                    case nil:
                        if !loggedIn, text.hasPrefix("* BYE") {
                            failure = Failure(description: "the server refused the connection: \(text.dropFirst(6))")
                        }
                        onUntagged(text)
                    case "a":
                        guard case .ok = event else {
                            failure = Failure(description: "login refused: \(line.words.dropFirst().joined(separator: " "))")
                            connection.close()
                            return
                        }
                        loggedIn = true
                        sendNext()
                    case "r":
                        if onReply(text, event) { sendNext() } else { connection.close() }
                    default:
                        break
                    }
                }
            }
            connection.onEnd = { end in
                if case .failed(let reason) = end, reason.hasPrefix("TLS"), failure == nil { failure = Failure(description: reason) }
                if !loggedIn, failure == nil { failure = Failure(description: "the server closed the connection") }
                connection.close()
            }
            connection.startReading()
            connection.write("h \(Command.hello(version: "1", clientName: "plistsync-cli").requestText)\na \(login.requestText)\n")
        }
        loop.run()
        loop.close()
        if let failure { throw failure }
    }
}
