import EventLoop
import Foundation
import SyncCore
import SyncProtocol

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

    public init(server: SocketAddress, user: String, credential: AgentConfiguration.Credential) {
        self.server = server
        self.user = user
        self.credential = credential
    }

    /// Runs `requests` in order after login. `onUntagged` sees `*` lines; `onReply` sees each
    /// tagged reply and returns whether to go on. With `stayOpen`, it keeps reading after the
    /// last reply until the server closes (for `watch`).
    public func run(
        _ requests: [String], stayOpen: Bool = false,
        onUntagged: @escaping (String) -> Void = { _ in },
        onReply: @escaping (String, ServerEvent) -> Bool = { _, _ in true }
    ) throws {
        let loop = EventLoop()
        var failure: Failure?
        var queue = requests
        var framer = LineFramer(maxLineBytes: 64 << 20)
        let login: String
        switch credential {
        case .password(let password): login = "AUTH \(ResponseLine.argument(user)) \(ResponseLine.argument(password))"
        case .token(let token): login = "AUTH TOKEN \(ResponseLine.argument(token))"
        }
        TCPConnection.connect(on: loop, to: server) { result in
            guard case .success(let connection) = result else {
                failure = Failure(description: "cannot connect to \(self.server): is the server running?")
                return
            }
            var loggedIn = false
            func sendNext() {
                guard !queue.isEmpty else {
                    if !stayOpen {
                        connection.write("q QUIT\n")
                        connection.closeAfterWriting()
                    }
                    return
                }
                connection.write("r \(queue.removeFirst())\n")
            }
            connection.onData = { bytes in
                framer.append(bytes)
                while let raw = try? framer.nextLine() {
                    let text = String(decoding: raw, as: UTF8.self)
                    guard let line = ServerLine.parseAnsweringTag(raw) else { continue }
                    let event = ServerEvent(line)
                    switch line.tag {
                    case nil:
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
            connection.onEnd = { _ in
                if !loggedIn, failure == nil { failure = Failure(description: "the server closed the connection") }
                connection.close()
            }
            connection.startReading()
            connection.write("h HELLO 1 plistsync-cli\na \(login)\n")
        }
        loop.run()
        loop.close()
        if let failure { throw failure }
    }
}
