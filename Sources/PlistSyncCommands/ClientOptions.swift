import AgentKit
import EventLoop
import Foundation
import TLSKit

/// The options every client command shares: which server, which user, and how to log in.
struct ClientOptions {
    static let valueOptions: Set<String> = ["server", "user", "password-file", "token-file", "ca", "fingerprint"]
    static let flagOptions: Set<String> = ["tls", "insecure"]
    static let usage = """
          --server HOST:PORT   Server address (default 127.0.0.1:7420); HOST:PORT,HOST:PORT,… names
                               servers sharing one store: the agent moves to the next when one
                               cannot be reached (commands use the first).
          --user NAME          Account name.
          --password-file F    Log in with the password on the first line of F.
          --token-file F       Log in with a token from `plistsync login` (default: the one it stored).
          --tls                Talk TLS, trusting the certificate `login --tls` pinned (else the system CAs).
          --ca FILE            Talk TLS, trusting certificates that chain to FILE (PEM).
          --fingerprint SHA256 Talk TLS to the server whose certificate has this fingerprint.
          --insecure           Allow a password to cross the network in plaintext (not to loopback).
        """

    let server: SocketAddress
    /// The servers after the first in `--server a,b,c`.
    let alternateServers: [SocketAddress]
    let user: String
    let credential: AgentConfiguration.Credential
    /// The file the credential was read from.
    let credentialFile: String
    let tls: TLSContext?

    init(_ options: Arguments) throws {
        let addresses = (options.value("server") ?? "127.0.0.1:7420").split(separator: ",").map { SocketAddress(parsing: String($0)) }
        guard let server = addresses.first ?? nil, !addresses.contains(where: { $0 == nil }) else {
            throw UsageError("--server must be HOST:PORT (or HOST:PORT,HOST:PORT,… for servers sharing one store)")
        }
        // Without --user, the one account `plistsync login` stored a token for on this server.
        let stored = Self.storedLogins(server: server)
        guard let user = options.value("user") ?? (stored.count == 1 ? stored[0] : nil) else {
            throw UsageError(stored.isEmpty ? "--user is required (or run `plistsync login` first)"
                : "--user is required: there are logins for \(stored.joined(separator: ", ")) on \(server)")
        }
        self.server = server
        alternateServers = addresses.dropFirst().compactMap { $0 }
        self.user = user
        if let passwordFile = options.value("password-file") {
            guard options.value("token-file") == nil else { throw UsageError("give --password-file or --token-file, not both") }
            credential = .password(try Self.firstLine(of: passwordFile, what: "password"))
            credentialFile = passwordFile
        } else {
            let tokenFile = options.value("token-file") ?? Self.defaultTokenPath(server: server, user: user)
            guard FileManager.default.fileExists(atPath: tokenFile) else {
                throw UsageError("no credentials: give --password-file F or --token-file F, or run `plistsync login` first")
            }
            credential = .token(try Self.firstLine(of: tokenFile, what: "token"))
            credentialFile = tokenFile
        }
        tls = try Self.tls(options, server: server, user: user)
        if case .password = credential { try Self.refusePlaintextPassword(options, server: server, tls: tls) }
    }

    var client: ScriptClient { ScriptClient(server: server, user: user, credential: credential, tls: tls) }

    /// The TLS trust `--tls`, `--ca` and `--fingerprint` ask for; a fingerprint `login` pinned
    /// for this server and user turns TLS on by itself. Nil: plaintext.
    static func tls(_ options: Arguments, server: SocketAddress, user: String) throws -> TLSContext? {
        let trust: TLSContext.Trust
        if let fingerprint = options.value("fingerprint") {
            trust = .fingerprint(fingerprint)
        } else if let authority = options.value("ca") {
            guard FileManager.default.isReadableFile(atPath: authority) else { throw UsageError("cannot read the CA file \(authority)") }
            trust = .authority(authority)
        } else if let pinned = try? firstLine(of: pinPath(server: server, user: user), what: "fingerprint") {
            trust = .fingerprint(pinned)
        } else if options.flag("tls") {
            trust = .systemCAs
        } else {
            return nil
        }
        do {
            return try TLSContext.client(trusting: trust)
        } catch {
            throw RuntimeError("\(error)")
        }
    }

    /// A password is not sent in clear text over a network unless the user says so.
    static func refusePlaintextPassword(_ options: Arguments, server: SocketAddress, tls: TLSContext?) throws {
        guard tls == nil, !server.isLoopback, !options.flag("insecure") else { return }
        throw UsageError("refusing to send a password in plaintext to \(server): use --tls (or --insecure if the network is private)")
    }

    /// Where `login --tls` keeps the server's certificate fingerprint, next to the token.
    static func pinPath(server: SocketAddress, user: String) -> String {
        String(defaultTokenPath(server: server, user: user).dropLast(".token".count)) + ".fingerprint"
    }

    static func firstLine(of path: String, what: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw RuntimeError("cannot read the \(what) file \(path)") }
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard !line.isEmpty else { throw RuntimeError("the \(what) file \(path) is empty") }
        return line
    }

    /// The users `plistsync login` stored a token for on `server`, by name.
    static func storedLogins(server: SocketAddress) -> [String] {
        let folder = (defaultTokenPath(server: server, user: "") as NSString).deletingLastPathComponent
        let suffix = String((defaultTokenPath(server: server, user: "") as NSString).lastPathComponent)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(suffix) && $0.count > suffix.count }.map { String($0.dropLast(suffix.count)) }.sorted()
    }

    /// Where `login` keeps a token: `~/.config/plistsync/<user>@<host>_<port>.token`.
    /// `path` made absolute against the working directory, as every file option is read
    /// (`tok` names ./tok, whose folder must not be taken for "").
    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    static func defaultTokenPath(server: SocketAddress, user: String) -> String {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        let host = server.host.replacingOccurrences(of: ":", with: "_")
        return "\(home)/.config/plistsync/\(user)@\(host)_\(server.port).token"
    }
}
