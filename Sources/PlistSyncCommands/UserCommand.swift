import Foundation
import PostgresStore
import SQLiteStore
import ServerKit
import SyncCore
import SyncProtocol

/// `plistsync user add|passwd|remove|list`: account administration on the data folder, whether
/// or not a server is running on it.
enum UserCommand: Subcommand {
    static let help = """
        OVERVIEW: Manage PlistSync accounts in a data folder.

        USAGE: plistsync user add|passwd|remove|list [<name>] [--data DIR | --store URL] [--password-stdin] [--admin]

        OPTIONS:
          --data DIR          Data folder: else $PLISTSYNC_DATA, the config file's data line, or
                              ./plistsync-data if it exists (found as `serve` finds it).
          --store URL         The PostgreSQL store (postgresql://…) the servers share; every
                              server applies the change at once.
          --config FILE       The server's config file (else $PLISTSYNC_CONFIG or
                              /etc/plistsync/server.conf).
          --password-stdin    Read the password from the first line of standard input.
          --admin             (add) Make the user a server admin, allowed everything.
          --iterations N      (add, passwd) PBKDF2 iterations (default 600000, OWASP 2023).
          -h, --help          Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["data", "iterations", "config", "store"], flagOptions: ["password-stdin", "admin"])
        guard let action = options.positionals.first else { throw UsageError("missing action: add, passwd, remove or list") }
        let config = try ConfigFile.find(options)
        let accounts: AccountBook
        umask(0o077)
        if let url = options.value("store") ?? config?.values["store"] {
            guard StoreURL.isPostgres(url) else { throw UsageError("--store takes a postgresql:// URL") }
            do {
                accounts = try PostgresAccounts(url: url)
            } catch {
                throw RuntimeError("cannot open the store: \(error)")
            }
        } else {
            // A folder named by a flag, the environment or the config file is made on first use;
            // the fallback ./plistsync-data only when it exists (not a second, empty store).
            let location = DataLocation(options, config: config)
            let folder = DataFolder(path: location.isConfigured ? location.path : try location.existing())
            do {
                accounts = FolderAccounts(folder: folder, accounts: try Accounts(folder: folder))
            } catch {
                throw RuntimeError("cannot open the data folder: \(error)")
            }
        }
        let iterations = try options.integer(
            "iterations", default: PasswordHasher.defaultIterations, range: PasswordHasher.minimumIterations...100_000_000)

        if action == "list" {
            guard options.positionals.count == 1 else { throw UsageError("list takes no name") }
            for user in try accounts.users() { Console.out(user.isAdmin ? "\(user.name) (admin)" : user.name) }
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
            accounts.tellRunningServers()
            Console.out("added user \(name)")
        case "passwd":
            let password = try readPassword(fromStdin: options.flag("password-stdin"))
            guard try accounts.setPassword(name, passwordHash: PasswordHasher.hash(password, iterations: iterations)) else {
                throw RuntimeError("no user \(name)")
            }
            accounts.tellRunningServers()
            Console.out("changed the password of \(name); their tokens are revoked and their connections closed")
        case "remove":
            guard try accounts.removeUser(name) else { throw RuntimeError("no user \(name)") }
            accounts.tellRunningServers()
            Console.out("removed user \(name); their connections are closed")
        default:
            throw UsageError("unknown action '\(action)'")
        }
    }

    private static func readPassword(fromStdin: Bool) throws -> String {
        let password: String?
        if fromStdin {
            password = Console.readLine()
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
        Console.error(prompt)
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            Console.error("\n")
        }
        return Console.readLine()
    }
}

/// Where `plistsync user` changes accounts: a data folder's SQLite store or a PostgreSQL store.
protocol AccountBook {
    func users() throws -> [StoredUser]
    func addUser(_ name: String, passwordHash: String, isAdmin: Bool) throws -> Bool
    func setPassword(_ name: String, passwordHash: String) throws -> Bool
    func removeUser(_ name: String) throws -> Bool
    /// Makes sure servers using the store apply the change (waits for them where it can).
    func tellRunningServers()
}

/// The accounts of a data folder, and the doorbell of a server running on it.
struct FolderAccounts: AccountBook {
    let folder: DataFolder
    let accounts: Accounts

    func users() throws -> [StoredUser] { try accounts.users() }
    func addUser(_ name: String, passwordHash: String, isAdmin: Bool) throws -> Bool { try accounts.addUser(name, passwordHash: passwordHash, isAdmin: isAdmin) }
    func setPassword(_ name: String, passwordHash: String) throws -> Bool { try accounts.setPassword(name, passwordHash: passwordHash) }
    func removeUser(_ name: String) throws -> Bool { try accounts.removeUser(name) }

    /// Rings a server running on the folder and waits until it has applied the change, so the
    /// command returns only after revoked connections are closed.
    func tellRunningServers() {
        guard let epoch = try? accounts.epoch() else { return }
        let channel = ControlChannel(folder: folder)
        channel.announceAccountsChanged(epoch: epoch)
        if !channel.waitUntilApplied(epoch: epoch, seconds: 5) {
            Console.error("plistsync user: the running server has not confirmed the change yet; it applies it within seconds\n")
        }
    }
}

/// Every node hears the change as it commits (NOTIFY); nothing to wait for.
extension PostgresAccounts: AccountBook {
    func tellRunningServers() {}
}
