import AgentKit
import EventLoop
import Foundation

/// The options every client command shares: which server, which user, and how to log in.
struct ClientOptions {
    static let valueOptions: Set<String> = ["server", "user", "password-file", "token-file"]
    static let usage = """
          --server HOST:PORT   Server address (default 127.0.0.1:7420).
          --user NAME          Account name.
          --password-file F    Log in with the password on the first line of F.
          --token-file F       Log in with a token from `plistsync login` (default: the one it stored).
        """

    let server: SocketAddress
    let user: String
    let credential: AgentConfiguration.Credential

    init(_ options: Arguments) throws {
        let address = options.value("server") ?? "127.0.0.1:7420"
        guard let server = SocketAddress(parsing: address) else { throw UsageError("--server must be HOST:PORT") }
        guard let user = options.value("user") else { throw UsageError("--user is required") }
        self.server = server
        self.user = user
        if let passwordFile = options.value("password-file") {
            guard options.value("token-file") == nil else { throw UsageError("give --password-file or --token-file, not both") }
            credential = .password(try Self.firstLine(of: passwordFile, what: "password"))
        } else {
            let tokenFile = options.value("token-file") ?? Self.defaultTokenPath(server: server, user: user)
            guard FileManager.default.fileExists(atPath: tokenFile) else {
                throw UsageError("no credentials: give --password-file F or --token-file F, or run `plistsync login` first")
            }
            credential = .token(try Self.firstLine(of: tokenFile, what: "token"))
        }
    }

    var client: ScriptClient { ScriptClient(server: server, user: user, credential: credential) }

    static func firstLine(of path: String, what: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw RuntimeError("cannot read the \(what) file \(path)") }
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard !line.isEmpty else { throw RuntimeError("the \(what) file \(path) is empty") }
        return line
    }

    /// Where `login` keeps a token: `~/.config/plistsync/<user>@<host>_<port>.token`.
    static func defaultTokenPath(server: SocketAddress, user: String) -> String {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        let host = server.host.replacingOccurrences(of: ":", with: "_")
        return "\(home)/.config/plistsync/\(user)@\(host)_\(server.port).token"
    }
}
