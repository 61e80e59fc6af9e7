import PlistSyncCommands

/// A `plistsync` subcommand run inside the test process, on a console in memory: the same code
/// as the executable's, without starting it. Commands that run until stopped (`serve`, `agent`,
/// `watch`) or start processes (`bench`) go through `PlistSyncBinary`, as do tests of the
/// process itself (exit status, no backtrace, environment, working folder).
enum PlistSyncCommand {
    /// The exit status, stdout and stderr, as `PlistSyncBinary.run` gives them.
    @discardableResult
    static func run(_ arguments: [String], input: String = "") -> (Int32, String, String) {
        let console = Console(input: input)
        let status = CLI.run(arguments, console: console)
        return (status, console.output, console.errors)
    }
}
