import Foundation
import EventLoop
import ServerKit

/// The release, as `plistsync --version` prints it.
enum PlistSyncVersion {
    static let current = "0.11.0"
}

/// The `plistsync` command: dispatches to subcommands and turns their errors into exit codes.
public enum CLI {
    static let overview = """
        OVERVIEW: PlistSync keeps collections of plist records in sync between people and machines.

        USAGE: plistsync <subcommand> [options]

        SUBCOMMANDS:
          serve        Run the sync server.
          user         Add, change, remove or list accounts in a data folder.
          backup|restore FILE
                       Copy the server's store while it runs; put a copy back.
          agent        Mirror a folder of plist files through a server.
          login        Log in once and keep a token; logout revokes it.
          invite C     Invite someone to a collection: prints a link (--list, --revoke ID).
          join LINK    Join a collection from an invitation's link, and mirror it.
          passwd       Change your password on the server (your other devices are logged out).
          devices|revoke
                       List your devices (login tokens); revoke another device's token.
          status       Show what the agent of a folder is doing.
          attach|import|export
                       Mirror an app's whole-list file; move a collection in or out as one file.
          conflicts|resolve|versions|restore|deletes
                       See and settle conflict copies; bring back kept versions; confirm
                       or undo a held mass delete.
          ls|get|put|rm|mv|watch|create|grant|rename|drop
                       Scripting client: list, read, write, delete, move records, tail changes;
                       make, share, rename and delete collections.
          log|revert   See who changed a collection (user, device, when); take a user's or a
                       device's changes back as new revisions.
          bench        Measure a server: durable write throughput, fan-out latency.

          See 'plistsync <subcommand> --help' for a subcommand's options; --version the release.
        """

    /// Runs a command line on `console` (a test's, in memory) and gives its exit status. Not
    /// for `serve`, `agent`, `watch` or `bench`, which run until stopped or start processes.
    public static func run(_ arguments: [String], console: Console) -> Int32 {
        let saved = Console.current
        Console.current = console
        defer { Console.current = saved }
        return run(arguments)
    }

    /// Runs a command line on the process's stdin, stdout and stderr; gives its exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        // A peer that hangs up must cost one connection, never the process (server, agent, CLI).
        ProcessSignals.ignoreBrokenPipe()
        guard let name = arguments.first else {
            Console.out(overview)
            return 64
        }
        let rest = Array(arguments.dropFirst())
        let subcommand: Subcommand.Type
        switch name {
        case "serve": subcommand = ServeCommand.self
        case "user": subcommand = UserCommand.self
        case "bench": subcommand = BenchCommand.self
        case "agent": subcommand = AgentCommand.self
        case "login": subcommand = LoginCommand.self
        case "join": subcommand = JoinCommand.self
        case "invite": subcommand = InviteCommand.self
        case "passwd": subcommand = PasswdCommand.self
        case "logout": subcommand = LogoutCommand.self
        case "status": subcommand = StatusCommand.self
        case "backup":
            return runVerb(name, rest, of: BackupCommand.self)
        case "restore" where BackupCommand.namesABackup(rest):
            return runVerb(name, rest, of: BackupCommand.self)
        case "devices", "revoke":
            return runVerb(name, rest, of: DevicesCommand.self)
        case "--version", "version":
            Console.out("plistsync \(PlistSyncVersion.current)")
            return 0
        case "attach", "import", "export":
            return runVerb(name, rest, of: TransferCommand.self)
        case "conflicts", "resolve", "versions", "restore", "deletes":
            return runVerb(name, rest, of: HistoryCommand.self)
        case "ls", "get", "put", "rm", "mv", "watch", "create", "grant", "drop", "rename":
            return runVerb(name, rest, of: ScriptCommand.self)
        case "log", "revert":
            return runVerb(name, rest, of: LogCommand.self)
        case "--help", "-h", "help":
            Console.out(overview)
            return 0
        default:
            Console.error("plistsync: unknown subcommand '\(name)'\n\(overview)\n")
            return 64
        }
        if rest.contains("--help") || rest.contains("-h") {
            Console.out(subcommand.help)
            return 0
        }
        return outcome(name, help: subcommand.help) { try subcommand.run(rest) }
    }

    /// Runs one verb of a family that shares a help text (`plistsync import …`, `resolve …`).
    private static func runVerb(_ name: String, _ rest: [String], of family: VerbSubcommand.Type) -> Int32 {
        if rest.contains("--help") || rest.contains("-h") {
            Console.out(family.help)
            return 0
        }
        return outcome(name, help: family.help) { try family.run(name, rest) }
    }

    /// Runs a subcommand body and turns its errors into a message on stderr and an exit status.
    private static func outcome(_ name: String, help: String = ScriptCommand.help, _ body: () throws -> Void) -> Int32 {
        do {
            try body()
            return 0
        } catch let error as UsageError {
            Console.error("plistsync \(name): \(error.message)\n\(usageSection(of: help))\nSee 'plistsync \(name) --help'.\n")
            return 64
        } catch let error as RuntimeError {
            Console.error("plistsync \(name): \(error.message)\n")
            return 1
        } catch {
            Console.error("plistsync \(name): \(error)\n")
            return 1
        }
    }
}

/// The USAGE lines of a help text, shown after a usage mistake.
private func usageSection(of help: String) -> String {
    let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
    guard let start = lines.firstIndex(where: { $0.hasPrefix("USAGE:") }) else { return "" }
    let end = lines[start...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) ?? lines.endIndex
    return lines[start..<end].joined(separator: "\n")
}

/// One subcommand: its help text and its body.
protocol Subcommand {
    static var help: String { get }
    static func run(_ arguments: [String]) throws
}

/// A family of subcommands that share a help text, each named by its first word.
protocol VerbSubcommand: Subcommand {
    static func run(_ verb: String, _ arguments: [String]) throws
}

extension VerbSubcommand {
    static func run(_ arguments: [String]) throws {
        guard let verb = arguments.first else { throw UsageError("missing command") }
        try run(verb, Array(arguments.dropFirst()))
    }
}
