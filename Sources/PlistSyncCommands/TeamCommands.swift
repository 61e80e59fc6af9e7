import AgentKit
import EventLoop
import Foundation
import SyncCore
import SyncProtocol
import TLSKit

/// `plistsync join '<link>' --dir DIR`: redeems an invitation (making an account when the
/// server lets it, else logging in to the user's own), pins the certificate the link names,
/// keeps the token as `login` does, and starts mirroring.
enum JoinCommand: Subcommand {
    static let help = """
        OVERVIEW: Join a collection you were invited to, from the invitation's link, and mirror it.

        USAGE: plistsync join '<link>' --dir DIR [--user NAME] [--device NAME] [--existing]
                              [--password-stdin] [--install] [--insecure]

        The link carries the server's address and, under TLS, its certificate's fingerprint: the
        connection is pinned to it (a server showing another certificate is refused), with no
        question to answer. The password is asked once (a new account's, or your existing one's).

        OPTIONS:
          --dir DIR            The folder to mirror into (made if missing).
          --user NAME          The account to make or use (default: your login name).
          --device NAME        Names this machine in conflict copies and the devices list
                               (default: the host name).
          --existing           Log in to an account you have, even where the link could make one.
          --password-stdin     Read the password from the first line of standard input.
          --install            Write the agent's settings for plistsync-agent@USER.service and
                               enable it, instead of mirroring in the foreground (run it as
                               yourself: what needs root is printed when it cannot be written).
          --insecure           Allow the password to cross the network in plaintext (an http:// link).
          -h, --help           Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["dir", "user", "device"], flagOptions: ["existing", "password-stdin", "install", "insecure"])
        guard options.positionals.count == 1 else { throw UsageError("give the invitation's link, in quotes: plistsync join '<link>' --dir DIR") }
        let link: InvitationLink
        do {
            link = try InvitationLink(parsing: options.positionals[0])
        } catch {
            throw UsageError("\(error)")
        }
        guard let dir = options.value("dir") else { throw UsageError("--dir is required: the folder to mirror into") }
        let localUser = ProcessInfo.processInfo.environment["USER"] ?? "me"
        let user = options.value("user") ?? localUser
        guard Names.isValidUser(user) else { throw UsageError("user names match [A-Za-z0-9][A-Za-z0-9._-]{0,63}: give one with --user") }
        let device = options.value("device") ?? ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "device"
        guard let server = SocketAddress(parsing: "\(link.host.contains(":") ? "[\(link.host)]" : link.host):\(link.linePort)") else {
            throw UsageError("the link's host \(link.host) is not an address this machine can reach")
        }
        let tls: TLSContext?
        do {
            if let fingerprint = link.fingerprint {
                tls = try TLSContext.client(trusting: .fingerprint(fingerprint))
            } else {
                tls = link.isSecure ? try TLSContext.client(trusting: .systemCAs) : nil
            }
        } catch {
            throw RuntimeError("\(error)")
        }
        try ClientOptions.refusePlaintextPassword(options, server: server, tls: tls)

        let invitation = try peek(link.secret, at: server, tls: tls)
        Console.error("invited to \(invitation.collection) as \(invitation.role.name) by \(invitation.madeBy)"
            + (invitation.note.map { " (\($0))" } ?? "") + "\n")
        let makesAccount = invitation.makesAccounts && !options.flag("existing")
        let password = try readPassword(prompt: makesAccount ? "Password for your new account \(user): " : "Password for \(user): ",
                                        fromStdin: options.flag("password-stdin"))
        var redeemed = try redeem(link.secret, as: makesAccount ? .new(user: user, password: password) : .existing(user: user, password: password),
                                  device: device, at: server, tls: tls)
        if case .failure(let failure) = redeemed, makesAccount, failure.description.contains("EXISTS") {
            // The name is taken: perhaps by this person; the password they typed decides.
            redeemed = try redeem(link.secret, as: .existing(user: user, password: password), device: device, at: server, tls: tls)
        }
        let token = try redeemed.get()
        let tokenPath = ClientOptions.defaultTokenPath(server: server, user: user)
        try LoginCommand.writePrivate(token, to: tokenPath)
        if let fingerprint = link.fingerprint { try LoginCommand.writePrivate(fingerprint, to: ClientOptions.pinPath(server: server, user: user)) }
        Console.out("joined \(invitation.collection) as \(user) (\(invitation.role.name)); token stored in \(tokenPath)")

        let directory = URL(fileURLWithPath: dir).standardizedFileURL.path
        if options.flag("install") {
            return try AgentUnit.install(localUser: localUser, server: server, user: user, tokenFile: tokenPath, directory: directory, device: device)
        }
        var agent = ["--server", "\(server)", "--user", user, "--token-file", tokenPath, "--dir", directory, "--device", device]
        if let fingerprint = link.fingerprint { agent += ["--fingerprint", fingerprint] }
        Console.out("mirroring into \(directory); stop with Ctrl-C (or run it as a service with --install)")
        try AgentCommand.run(agent)
    }

    private static func peek(_ secret: String, at server: SocketAddress, tls: TLSContext?) throws -> InvitationSummary {
        var summary: InvitationSummary?
        try ScriptClient(server: server, opening: .invitePeek(secret: secret), tls: tls).run([], onOpened: { event in
            if case .ok(_, .invitation(let found), _) = event { summary = found }
        })
        guard let summary else { throw RuntimeError("the server did not say what the invitation is for") }
        return summary
    }

    /// The token a redemption made, or why it was refused.
    private static func redeem(_ secret: String, as account: RedeemingAccount, device: String, at server: SocketAddress, tls: TLSContext?) throws
        -> Result<String, ScriptClient.Failure>
    {
        var token: String?
        do {
            try ScriptClient(server: server, opening: .redeem(secret: secret, account: account, label: "join on \(device)"), tls: tls).run([], onOpened: { event in
                if case .ok(_, .redeemed(_, _, _, let made), _) = event { token = made }
            })
        } catch let failure as ScriptClient.Failure {
            return .failure(failure)
        }
        guard let token else { return .failure(ScriptClient.Failure(description: "the server gave no token")) }
        return .success(token)
    }

    static func readPassword(prompt: String, fromStdin: Bool) throws -> String {
        let password: String?
        if fromStdin {
            password = Console.readLine()
        } else {
            guard isatty(STDIN_FILENO) != 0 else { throw UsageError("no terminal to ask for the password: use --password-stdin") }
            password = Terminal.readSecret(prompt: prompt)
        }
        guard let password, !password.isEmpty else { throw RuntimeError("the password is empty") }
        return password
    }
}

/// `plistsync passwd`: changes your own password on the server, from any machine you are
/// logged in on. Your other devices' tokens are revoked; this one's stays.
enum PasswdCommand: Subcommand {
    static let help = """
        OVERVIEW: Change your password on the server. Your other devices are logged out.

        USAGE: plistsync passwd --server HOST:PORT [--user NAME] [--token-file F | --password-file F] [--password-stdin]

        With --password-stdin the old password is read from the first line and the new one from
        the second; else both are asked on the terminal (the new one twice).

        OPTIONS:
        \(ClientOptions.usage)
          --password-stdin     Read the old and the new password from standard input.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions, flagOptions: ClientOptions.flagOptions.union(["password-stdin"]))
        guard options.positionals.isEmpty else { throw UsageError("unexpected argument '\(options.positionals[0])'") }
        let client = try ClientOptions(options)
        let old: String
        let new: String
        if options.flag("password-stdin") {
            guard let first = Console.readLine(), let second = Console.readLine(), !first.isEmpty, !second.isEmpty else {
                throw UsageError("--password-stdin reads the old password, then the new one, a line each")
            }
            (old, new) = (first, second)
        } else {
            old = try JoinCommand.readPassword(prompt: "Current password for \(client.user): ", fromStdin: false)
            new = try JoinCommand.readPassword(prompt: "New password: ", fromStdin: false)
            guard Terminal.readSecret(prompt: "Again: ") == new else { throw RuntimeError("the new passwords differ; nothing was changed") }
        }
        try client.request(.passwd(old: old, new: new), refusedAs: "the password was not changed: ")
        Console.out("changed the password of \(client.user); your other devices are logged out")
    }
}

/// The agent as a service: the settings `plistsync-agent@USER.service` (Deploy/) reads, written
/// to /etc/plistsync, and the unit enabled.
enum AgentUnit {
    static func install(localUser: String, server: SocketAddress, user: String, tokenFile: String, directory: String, device: String) throws {
        let etc = ProcessInfo.processInfo.environment["PLISTSYNC_ETC"] ?? "/etc/plistsync"
        let path = "\(etc)/agent-\(localUser).conf"
        let settings = """
            # Written by `plistsync join` for plistsync-agent@\(localUser).service.
            PLISTSYNC_SERVER=\(server)
            PLISTSYNC_USER=\(user)
            PLISTSYNC_TOKEN_FILE=\(tokenFile)
            PLISTSYNC_DIR=\(directory)
            PLISTSYNC_DEVICE=\(device)

            """
        let unit = "plistsync-agent@\(localUser).service"
        do {
            try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
            try settings.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            // Joined as the person (the token and pin are theirs); the system's part needs root.
            Console.out("as root, put these lines in \(path):\n\(settings)then run: sudo systemctl enable --now \(unit)")
            return
        }
        Console.out("wrote \(path)")
        let systemctl = ["/usr/bin/systemctl", "/bin/systemctl"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let systemctl, ProcessInfo.processInfo.environment["PLISTSYNC_ETC"] == nil else {
            Console.out("now run: sudo systemctl enable --now \(unit)")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: systemctl)
        process.arguments = ["enable", "--now", unit]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw RuntimeError("systemctl enable --now \(unit) failed; is Deploy/install.sh run?") }
        Console.out("enabled \(unit): the agent mirrors into \(directory)")
    }
}

/// `plistsync invite`: makes an invitation to a collection (its admins may) and prints its
/// link; lists the open ones, or revokes one.
enum InviteCommand: Subcommand {
    static let help = """
        OVERVIEW: Invite someone to a collection: prints a link that gives them the role.

        USAGE: plistsync invite <collection> [--role read|write|admin] [--uses N] [--expires-days D] [--note TEXT] [client options]
               plistsync invite <collection> --list | --revoke ID [client options]

        The link opens the console's join page (on the server's HTTP port), and carries the sync
        port and, under TLS, the certificate fingerprint: `plistsync join '<link>'` needs nothing else.

        OPTIONS:
          --role R             The role it gives (default write).
          --uses N             How many times it works (default 1).
          --expires-days D     How long it works (default 7).
          --note TEXT          Shown to the invitee and in the list.
          --list               The collection's open invitations.
          --revoke ID          Revoke one (its id from --list); the sessions it made end.
        \(ClientOptions.usage)
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions.union(["role", "uses", "expires-days", "note", "revoke"]),
                                    flagOptions: ClientOptions.flagOptions.union(["list"]))
        guard options.positionals.count == 1, let collection = options.positionals.first else { throw UsageError("name the collection: plistsync invite <collection>") }
        let client = try ClientOptions(options)
        if options.flag("list") {
            var lines: [String] = []
            try client.request(.inviteList(collection: collection), onUntagged: { line in
                guard line.hasPrefix("* INVITE ") else { return }
                lines.append(String(line.dropFirst(9)))
            })
            Console.out(lines.isEmpty ? "no open invitations to \(collection)" : "id role uses allowed created expires made-by note")
            for line in lines { Console.out(line) }
            return
        }
        if let id = options.value("revoke") {
            try client.request(.inviteRevoke(collection: collection, id: id))
            return Console.out("revoked invitation \(id); the sessions it made are closed")
        }
        guard let role = Role(name: options.value("role") ?? "write") else { throw UsageError("--role is read, write or admin") }
        let uses = try options.integer("uses", default: 1, range: 1...CommandParser.maxInvitationUses)
        let days = try options.integer("expires-days", default: 7, range: 1...365)
        var httpPort: Int?
        var made: (secret: String, expiresAt: Int64)?
        try client.request(.inviteNew(collection: collection, role: role, expiresInSeconds: Int64(days) * 86_400, uses: uses, note: options.value("note")),
                onHello: { event in
                    if case .ok(_, _, let payload?) = event, case .integer(let port)? = payload["http_port"] { httpPort = Int(port) }
                }, onReply: { event in
                    if case .ok(_, .invited(let secret, _, let expiresAt), _) = event { made = (secret, expiresAt) }
                })
        guard let made else { throw RuntimeError("the server did not make the invitation") }
        let host = client.server.host.contains(":") ? "[\(client.server.host)]" : client.server.host
        let fingerprint = try? ClientOptions.firstLine(of: ClientOptions.pinPath(server: client.server, user: client.user), what: "fingerprint")
        let pinned = options.value("fingerprint") ?? fingerprint
        guard let httpPort else {
            throw RuntimeError("the server has no HTTP listener (serve --http-listen) for the link to open; its secret is \(made.secret)")
        }
        Console.out(InvitationLink.text(isSecure: client.tls != nil, authority: "\(host):\(httpPort)", secret: made.secret, linePort: Int(client.server.port),
                                        fingerprint: pinned.flatMap(Fingerprint.normalized)))
        Console.error("\(role.name) access to \(collection), \(uses == 1 ? "once" : "\(uses) times"), until \(ServerNotice.time(made.expiresAt)); the link is shown this once\n")
    }
}

extension ClientOptions {
    /// Runs one request after login; a refusal is the command's error (`CODE message`, after
    /// `refusedAs`).
    func request(_ command: Command, refusedAs prefix: String = "", onHello: @escaping (ServerEvent) -> Void = { _ in },
                 onUntagged: @escaping (String) -> Void = { _ in }, onReply: @escaping (ServerEvent) -> Void = { _ in }) throws {
        var refusal: String?
        try client.run([command], onHello: onHello, onUntagged: onUntagged, onReply: { line, event in
            if case .ok = event { onReply(event) } else { refusal = String(line.split(separator: " ", maxSplits: 2).last ?? "") }
            return true
        })
        if let refusal { throw RuntimeError(prefix + refusal) }
    }
}
