import Foundation
import ServerKit

/// The `plistsync` command: dispatches to subcommands and turns their errors into exit codes.
enum CLI {
    static let overview = """
        OVERVIEW: PlistSync keeps collections of plist records in sync between people and machines.

        USAGE: plistsync <subcommand> [options]

        SUBCOMMANDS:
          serve        Run the sync server.
          user         Add, change, remove or list accounts in a data folder.
          agent        Mirror a folder of plist files through a server.
          login        Log in once and keep a token; logout revokes it.
          status       Show what the agent of a folder is doing.
          ls|get|put|rm|mv|watch
                       Scripting client: list, read, write, delete, move records, tail changes.
          bench        Measure a server: durable write throughput, fan-out latency.

          See 'plistsync <subcommand> --help' for a subcommand's options.
        """

    static func run(_ arguments: [String]) -> Int32 {
        guard let name = arguments.first else {
            print(overview)
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
        case "logout": subcommand = LogoutCommand.self
        case "status": subcommand = StatusCommand.self
        case "--help", "-h", "help":
            print(overview)
            return 0
        default:
            FileHandle.standardError.write(Data("plistsync: unknown subcommand '\(name)'\n\(overview)\n".utf8))
            return 64
        }
        if rest.contains("--help") || rest.contains("-h") {
            print(subcommand.help)
            return 0
        }
        do {
            try subcommand.run(rest)
            return 0
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("plistsync \(name): \(error.message)\n\n\(subcommand.help)\n".utf8))
            return 64
        } catch let error as RuntimeError {
            FileHandle.standardError.write(Data("plistsync \(name): \(error.message)\n".utf8))
            return 1
        } catch {
            FileHandle.standardError.write(Data("plistsync \(name): \(error)\n".utf8))
            return 1
        }
    }
}

/// One subcommand: its help text and its body.
protocol Subcommand {
    static var help: String { get }
    static func run(_ arguments: [String]) throws
}
