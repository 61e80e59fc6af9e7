import Foundation
import SQLiteKit

/// How the `plistsync user` commands and a server running on the same data folder tell each
/// other about account changes, through files in `DATA/control/`:
///
/// - `server.lock`: the server holds an exclusive `flock` on it while it runs (so a second
///   server on the folder is refused, and the commands know whether anyone must be told);
/// - `accounts.changed`: a command rewrites it (rename into place) after it commits a change to
///   users; the server watches the folder, re-reads accounts and ends revoked sessions;
/// - `accounts.applied`: the server writes the accounts epoch it has applied; a command waits
///   for it to reach its own, so `user remove` returns after the user's connections are gone.
///
/// The store's `accounts_epoch` counter is the truth; the files are only the doorbell.
public struct ControlChannel: Sendable {
    public let folder: DataFolder

    public init(folder: DataFolder) {
        self.folder = folder
    }

    var lockPath: String { folder.controlPath + "/server.lock" }
    var changedPath: String { folder.controlPath + "/accounts.changed" }
    var appliedPath: String { folder.controlPath + "/accounts.applied" }

    /// Creates `control/` (0700) if needed.
    public func prepare() throws(StoreError) {
        do {
            try FileManager.default.createDirectory(
                atPath: folder.controlPath, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .dataDirectory("cannot create \(folder.controlPath): \(error.localizedDescription)")
        }
    }

    /// Takes the server lock, held as long as the lock lives (the store's life: the process's,
    /// for `serve`); nil when another server holds it.
    public func lockForServer() throws(StoreError) -> ServerLock? {
        try prepare()
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .dataDirectory("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            close(descriptor)
            return nil
        }
        return ServerLock(descriptor: descriptor)
    }

    /// Whether a server holds the lock now.
    public func serverIsRunning() -> Bool {
        let descriptor = open(lockPath, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return false
        }
        return true
    }

    /// Rings the doorbell after an account change with `epoch`.
    public func announceAccountsChanged(epoch: Int64) {
        try? prepare()
        write("\(epoch)\n", to: changedPath)
    }

    /// The server says it has applied the accounts as of `epoch`.
    public func confirmApplied(epoch: Int64) {
        write("\(epoch)\n", to: appliedPath)
    }

    /// The epoch the server last confirmed, 0 if none.
    public func appliedEpoch() -> Int64 {
        guard let text = try? String(contentsOfFile: appliedPath, encoding: .utf8) else { return 0 }
        return Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Waits until a running server has applied `epoch`; false when it did not within `seconds`
    /// (true at once when no server runs).
    public func waitUntilApplied(epoch: Int64, seconds: Double) -> Bool {
        guard serverIsRunning() else { return true }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if appliedEpoch() >= epoch { return true }
            usleep(10_000)
        }
        return appliedEpoch() >= epoch
    }

    private func write(_ text: String, to path: String) {
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }
}

/// A data folder's server lock (flock on `server.lock`), released when it goes.
public final class ServerLock: Sendable {
    private let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}
