import Foundation
import SQLiteStore

/// `plistsync backup FILE` and `plistsync restore FILE`: a consistent copy of the server's store
/// taken while it runs, and putting one back while it is stopped.
enum BackupCommand: VerbSubcommand {
    static let help = """
        OVERVIEW: Back up the server's store while it runs, or restore a backup.

        USAGE: plistsync backup FILE [--data DIR | --config FILE]
               plistsync restore FILE [--data DIR | --config FILE]
        (`restore C/ID [STAMP]`, without a backup file, brings back a record version: see versions.)

        backup: one consistent snapshot of every account, token, collection and record (SQLite's
        online backup; writes go on meanwhile), written to FILE atomically.
        restore: the server must be stopped. FILE is checked (a PlistSync store, intact, not from
        a newer release), then replaces the store. The restored store gets a new server id, so
        agents notice and reconcile every folder afresh: records they hold that the backup lacks
        are sent again, nothing is lost on their side.

        OPTIONS:
          --data DIR       The server's data folder (found as `serve` finds it).
          --config FILE    The server's config file.
        """

    /// Whether `restore`'s arguments name a store backup (a SQLite file, or `--data`/`--config`)
    /// rather than a record version (`restore C/ID [STAMP]`, which `versions` lists).
    static func namesABackup(_ arguments: [String]) -> Bool {
        if arguments.contains(where: { $0.hasPrefix("--data") || $0.hasPrefix("--config") }) { return true }
        guard let first = arguments.first(where: { !$0.hasPrefix("-") }), let handle = FileHandle(forReadingAtPath: first) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
    }

    static func run(_ verb: String, _ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["data", "config"], flagOptions: [])
        guard options.positionals.count == 1 else { throw UsageError("\(verb) needs one FILE") }
        let file = options.positionals[0]
        let location = DataLocation(options, config: try ConfigFile.find(options))
        umask(0o077)
        switch verb {
        case "backup":
            let folder = DataFolder(path: try location.existing())
            do {
                try folder.backup(to: file)
            } catch {
                throw RuntimeError("cannot back up \(folder.path): \(error)")
            }
            Console.out("backed up \(folder.path) to \(file)")
        case "restore":
            let folder = DataFolder(path: location.path)
            do {
                try folder.restore(from: file)
            } catch {
                throw RuntimeError("cannot restore \(file): \(error)")
            }
            Console.out("restored \(file) into \(folder.path); agents will reconcile with it when they reconnect")
        default:
            throw UsageError("unknown command \(verb)")
        }
    }
}
