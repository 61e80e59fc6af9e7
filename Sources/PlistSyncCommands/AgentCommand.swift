import AgentKit
import EventLoop
import Foundation
import TLSKit
import SyncProtocol

/// `plistsync agent`: mirrors a directory through the server until SIGINT or SIGTERM.
enum AgentCommand: Subcommand {
    static let help = """
        OVERVIEW: Mirror a folder of plist files (one folder a collection, one file a record) through a server.

        USAGE: plistsync agent --server HOST:PORT[,HOST:PORT…] --user NAME (--password-file F | --token-file F) --dir DIR
                               [--collections a,b] [--device NAME]

        OPTIONS:
        \(ClientOptions.usage)
          --dir DIR            The mirrored folder.
          --collections a,b    Mirror only these collections.
          --device NAME        Names this machine in conflict copies (default: the host name).
          --debounce-ms N      Wait this long after a plain write before pushing (default 15).
          --rescan-seconds N   Full rescan interval, the backstop for missed events (default 3600).
          --confirm-deletes-over N
                               Hold a delete of more than N files of one collection within 10 s
                               until `plistsync deletes` confirms or undoes it (default 100; 0: never).
          -h, --help           Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(
            arguments, valueOptions: ClientOptions.valueOptions.union(["dir", "collections", "device", "debounce-ms", "rescan-seconds", "confirm-deletes-over"]),
            flagOptions: ClientOptions.flagOptions)
        guard options.positionals.isEmpty else { throw UsageError("unexpected argument '\(options.positionals[0])'") }
        let client = try ClientOptions(options)
        guard let dir = options.value("dir") else { throw UsageError("--dir is required") }
        let directory = URL(fileURLWithPath: dir).standardizedFileURL.path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = AgentConfiguration(
            server: client.server, user: client.user, credential: client.credential, directory: directory,
            device: options.value("device") ?? ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "device")
        configuration.tls = client.tls
        configuration.alternateServers = client.alternateServers
        configuration.credentialFile = URL(fileURLWithPath: client.credentialFile).standardizedFileURL.path
        if let list = options.value("collections") {
            configuration.collections = Set(list.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
        }
        configuration.debounceMilliseconds = UInt64(try options.integer("debounce-ms", default: 15, range: 0...60_000))
        configuration.rescanSeconds = UInt64(try options.integer("rescan-seconds", default: 3600, range: 1...604_800))
        configuration.confirmDeletesOver = try options.integer("confirm-deletes-over", default: 100, range: 0...Int(Int32.max))
        do {
            try Agent(configuration: configuration).run()
        } catch {
            throw RuntimeError("cannot run the agent on \(directory): \(error)")
        }
    }
}

/// `plistsync login`: asks for the password once and stores a revocable token (mode 0600).
enum LoginCommand: Subcommand {
    static let help = """
        OVERVIEW: Log in once and keep a token, so agents and scripts need no password.

        USAGE: plistsync login --server HOST:PORT --user NAME [--token-file F] [--password-stdin] [--label TEXT]
                               [--tls | --ca FILE | --fingerprint SHA256] [--insecure]

        With --tls and no --ca or --fingerprint, the server's certificate fingerprint is shown
        (and asked about on a terminal) before the password is sent, then kept next to the token:
        later commands talk TLS to that server by themselves and refuse a different certificate.

        OPTIONS:
          --server HOST:PORT   Server address (default 127.0.0.1:7420).
          --user NAME          Account name.
          --token-file F       Where to keep the token (default ~/.config/plistsync/USER@HOST_PORT.token).
          --password-stdin     Read the password from stdin (else it is asked on the terminal).
          --label TEXT         Names this device in `plistsync devices` (default: login on HOST).
          --tls                Talk TLS; trust the certificate on first use (shown, then pinned).
          --ca FILE            Talk TLS, trusting certificates that chain to FILE (PEM).
          --fingerprint SHA256 Talk TLS to the server whose certificate has this fingerprint.
          --insecure           Allow the password to cross the network in plaintext.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["server", "user", "token-file", "label", "ca", "fingerprint"],
                                    flagOptions: ["password-stdin", "tls", "insecure"])
        guard let address = SocketAddress(parsing: options.value("server") ?? "127.0.0.1:7420") else { throw UsageError("--server must be HOST:PORT") }
        guard let user = options.value("user") else { throw UsageError("--user is required") }
        let pinPath = ClientOptions.pinPath(server: address, user: user)
        var pin = options.value("fingerprint")
        if options.flag("tls"), pin == nil, options.value("ca") == nil {
            pin = try trustOnFirstUse(address, pinPath: pinPath, ask: !options.flag("password-stdin") && isatty(STDIN_FILENO) != 0)
        }
        let tls: TLSContext?
        do {
            tls = try pin.map { try TLSContext.client(trusting: .fingerprint($0)) } ?? ClientOptions.tls(options, server: address, user: user)
        } catch {
            throw RuntimeError("\(error)")
        }
        try ClientOptions.refusePlaintextPassword(options, server: address, tls: tls)
        let password: String?
        if options.flag("password-stdin") {
            password = Console.readLine()
        } else {
            guard isatty(STDIN_FILENO) != 0 else { throw UsageError("no terminal to ask for the password: use --password-stdin") }
            password = Terminal.readSecret(prompt: "Password for \(user): ")
        }
        guard let password, !password.isEmpty else { throw RuntimeError("the password is empty") }
        let path = ClientOptions.absolute(options.value("token-file") ?? ClientOptions.defaultTokenPath(server: address, user: user))
        let label = options.value("label") ?? "login on \(ProcessInfo.processInfo.hostName)"
        var token: String?
        var refusal: String?
        try ScriptClient(server: address, user: user, credential: .password(password), tls: tls).run([.tokenNew(label: label)], onReply: { line, event in
            if case .ok(_, .token(let made), _) = event { token = made } else { refusal = line }
            return true
        })
        guard let token else { throw RuntimeError("the server did not give a token: \(refusal ?? "no reply")") }
        try writePrivate(token, to: path)
        if let pin { try writePrivate(pin, to: pinPath) }
        Console.out("logged in as \(user); token stored in \(path)")
    }

    /// The fingerprint of the server's certificate, shown (and on a terminal, confirmed) before
    /// the password goes out; one `login` pinned before must still match.
    private static func trustOnFirstUse(_ server: SocketAddress, pinPath: String, ask: Bool) throws -> String {
        let seen = try ScriptClient.serverFingerprint(server)
        if let pinned = try? ClientOptions.firstLine(of: pinPath, what: "fingerprint"), Fingerprint.normalized(pinned) != Fingerprint.normalized(seen) {
            throw RuntimeError("""
                the certificate of \(server) changed: it was \(pinned), it is now \(seen). \
                If the server's certificate was replaced on purpose, delete \(pinPath) and log in again.
                """)
        }
        Console.error("the server's TLS certificate has SHA-256 fingerprint \(seen)\n")
        if ask {
            Console.error("does it match the one the server printed when it started? [y/N] ")
            guard Console.readLine()?.lowercased().hasPrefix("y") == true else { throw RuntimeError("not trusted; nothing was sent") }
        }
        return seen
    }

    /// Writes one line to a file only the user can read (its folder made 0700).
    static func writePrivate(_ line: String, to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw RuntimeError("cannot write \(path)") }
        fchmod(descriptor, 0o600)
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }
}

/// `plistsync logout`: revokes the stored token on the server and deletes the file.
enum LogoutCommand: Subcommand {
    static let help = """
        OVERVIEW: Revoke the token `plistsync login` stored, and delete it.

        USAGE: plistsync logout --server HOST:PORT --user NAME [--token-file F]

        OPTIONS:
        \(ClientOptions.usage)
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions, flagOptions: ClientOptions.flagOptions)
        let client = try ClientOptions(options)
        guard case .token(let token) = client.credential else { throw UsageError("logout needs a token") }
        var refusal: String?
        try client.client.run([.tokenRevoke(token)], onReply: { line, event in
            if case .ok = event {} else { refusal = line }
            return true
        })
        if let refusal { throw RuntimeError("the server did not revoke the token: \(refusal)") }
        let path = options.value("token-file") ?? ClientOptions.defaultTokenPath(server: client.server, user: client.user)
        unlink(path)
        Console.out("logged out; the token is revoked")
    }
}

