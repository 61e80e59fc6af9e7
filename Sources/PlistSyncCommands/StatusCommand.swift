import AgentKit
import Foundation

/// `plistsync status --dir DIR`: what the agent of DIR is doing, from its status file.
enum StatusCommand: Subcommand {
    static let help = """
        OVERVIEW: Show what the agent mirroring a folder is doing.

        USAGE: plistsync status --dir DIR [--json]
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["dir"], flagOptions: ["json"])
        guard let dir = options.value("dir") else { throw UsageError("--dir is required") }
        do {
            if options.flag("json") {
                Console.out(try StatusReport.json(directory: dir))
            } else {
                for line in try StatusReport.lines(directory: dir) { Console.out(line) }
            }
        } catch {
            throw RuntimeError(error.description)
        }
    }
}
