import CLibUV
import Glibc

/// Watches one folder (not recursively: inotify is per folder) and reports which entry changed.
///
/// Events are hints: a name may be missing, events may coalesce, and a full queue drops them,
/// so callers rescan on a timer as a backstop.
public final class FolderWatcher {
    /// What happened to an entry of the folder.
    public enum Event: Equatable, Sendable {
        /// Created, deleted or renamed (an atomic save ends in one).
        case renamed(String?)
        /// Written to or its attributes changed.
        case changed(String?)
        /// The watch failed (the folder went away, the watch limit was hit).
        case failed(String)
    }

    public let path: String
    /// The folder's own name: how libuv names an event of the folder itself.
    private let name: String
    /// The folder watched (device and inode when the watch began): a folder removed and made
    /// again under the same path is another folder, which this watch does not see.
    private let watched: FolderIdentity?
    /// Set by an event that may be the folder's own removal or move (libuv names those by the
    /// folder's base name): the inode is no proof, as a folder made again often gets it back.
    private var mayHaveLostItsFolder = false
    private let handle: UnsafeMutablePointer<uv_fs_event_t>
    private let callback: (Event) -> Void
    private var closed = false

    public init(loop: EventLoop, path: String, _ callback: @escaping (Event) -> Void) throws(LoopError) {
        self.path = path
        name = path.split(separator: "/").last.map(String.init) ?? path
        self.callback = callback
        watched = FolderIdentity(path)
        handle = .allocate(capacity: 1)
        uv_fs_event_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        let status = uv_fs_event_start(handle, { handle, name, events, status in
            let watcher = Unmanaged<FolderWatcher>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            guard status >= 0 else {
                return watcher.callback(.failed(String(cString: uv_strerror(status))))
            }
            let entry = name.map { String(cString: $0) }
            if events & Int32(UV_RENAME.rawValue) != 0 {
                if let entry { watcher.noteRename(of: entry) }
                watcher.callback(.renamed(entry))
            } else {
                watcher.callback(.changed(entry))
            }
        }, path, 0)
        if status < 0 {
            close()
            throw LoopError(status, "watch \(path)")
        }
    }

    /// Whether the folder at `path` is still the one this watch began on.
    public var watchesTheFolderAtItsPath: Bool {
        !mayHaveLostItsFolder && watched != nil && FolderIdentity(path) == watched
    }

    private func noteRename(of entry: String) {
        guard entry == name, access(path + "/" + entry, F_OK) != 0 else { return }
        mayHaveLostItsFolder = true
    }

    public func close() {
        guard !closed else { return }
        closed = true
        uv_close(asHandle(handle)) { handle in
            let watcher = Unmanaged<FolderWatcher>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            watcher.handle.deallocate()
        }
    }
}

/// A folder's device and inode.
private struct FolderIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init?(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
