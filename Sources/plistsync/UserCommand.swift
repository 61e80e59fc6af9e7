import Foundation
import RecordStore
import ServerKit
import SyncCore

/// `plistsync user add|passwd|remove|list`: account administration on the data folder, whether
/// or not a server is running on it.
enum UserCommand: Subcommand {
    static let help = """
        OVERVIEW: Manage PlistSync accounts in a data folder.

        USAGE: plistsync user add|passwd|remove|list [<name>] [--data DIR] [--password-stdin] [--admin]

        OPTIONS:
          --data DIR          Data folder: else $PLISTSYNC_DATA, the config file's data line, or
                              ./plistsync-data if it exists (found as `serve` finds it).
          --config FILE       The server's config file (else $PLISTSYNC_CONFIG or
                              /etc/plistsync/server.conf).
          --password-stdin    Read the password from the first line of standard input.
          --admin             (add) Make the user a server admin, allowed everything.
          --iterations N      (add, passwd) PBKDF2 iterations (default 600000, OWASP 2023).
          -h, --help          Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["data", "iterations", "config"], flagOptions: ["password-stdin", "admin"])
        guard let action = options.positionals.first else { throw UsageError("missing action: add, passwd, remove or list") }
        // A folder named by a flag, the environment or the config file is made on first use;
        // the fallback ./plistsync-data only when it exists (not a second, empty store).
        let location = DataLocation(options, config: try ConfigFile.find(options))
        let folder = DataFolder(path: location.isConfigured ? location.path : try location.existing())
        let accounts: Accounts
        umask(0o077)
        do {
            accounts = try Accounts(folder: folder)
        } catch {
            throw RuntimeError("cannot open the data folder: \(error)")
        }
        let iterations = try options.integer(
            "iterations", default: PasswordHasher.defaultIterations, range: PasswordHasher.minimumIterations...100_000_000)

        if action == "list" {
            guard options.positionals.count == 1 else { throw UsageError("list takes no name") }
            for user in try accounts.users() { print(user.isAdmin ? "\(user.name) (admin)" : user.name) }
            return
        }
        guard options.positionals.count == 2 else { throw UsageError("\(action) needs exactly one user name") }
        let name = options.positionals[1]
        switch action {
        case "add":
            guard !Names.isReservedUser(name) else { throw UsageError("'\(name)' is reserved (AUTH TOKEN is the token login); choose another name") }
            guard Names.isValidUser(name) else { throw UsageError("user names match [A-Za-z0-9][A-Za-z0-9._-]{0,63}") }
            let password = try readPassword(fromStdin: options.flag("password-stdin"))
            guard try accounts.addUser(name, passwordHash: PasswordHasher.hash(password, iterations: iterations), isAdmin: options.flag("admin")) else {
                throw RuntimeError("user \(name) exists")
            }
            tellRunningServer(folder, accounts)
            print("added user \(name)")
        case "passwd":
            let password = try readPassword(fromStdin: options.flag("password-stdin"))
            guard try accounts.setPassword(name, passwordHash: PasswordHasher.hash(password, iterations: iterations)) else {
                throw RuntimeError("no user \(name)")
            }
            tellRunningServer(folder, accounts)
            print("changed the password of \(name); their tokens are revoked and their connections closed")
        case "remove":
            guard try accounts.removeUser(name) else { throw RuntimeError("no user \(name)") }
            tellRunningServer(folder, accounts)
            print("removed user \(name); their connections are closed")
        default:
            throw UsageError("unknown action '\(action)'")
        }
    }

    /// Rings a server running on the folder and waits until it has applied the change, so the
    /// command returns only after revoked connections are closed.
    private static func tellRunningServer(_ folder: DataFolder, _ accounts: Accounts) {
        guard let epoch = try? accounts.epoch() else { return }
        let channel = ControlChannel(folder: folder)
        channel.announceAccountsChanged(epoch: epoch)
        if !channel.waitUntilApplied(epoch: epoch, seconds: 5) {
            FileHandle.standardError.write(Data("plistsync user: the running server has not confirmed the change yet; it applies it within seconds\n".utf8))
        }
    }

    private static func readPassword(fromStdin: Bool) throws -> String {
        let password: String?
        if fromStdin {
            password = readLine(strippingNewline: true)
        } else {
            guard isatty(STDIN_FILENO) != 0 else { throw UsageError("no terminal to ask for the password: use --password-stdin") }
            let first = Terminal.readSecret(prompt: "Password: ")
            let second = Terminal.readSecret(prompt: "Again: ")
            guard first == second else { throw RuntimeError("the passwords differ") }
            password = first
        }
        guard let password, !password.isEmpty else { throw RuntimeError("the password is empty") }
        return password
    }
}

/// Reads a secret from the terminal with echo off.
enum Terminal {
    static func readSecret(prompt: String) -> String? {
        FileHandle.standardError.write(Data(prompt.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true)
    }
}
