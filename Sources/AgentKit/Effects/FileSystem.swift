import Foundation

/// The file operations the mirror is made of, on absolute paths: the real file system when the
/// agent runs (`PosixFileSystem`), a simulated one in the simulation tests, which can fail any
/// of them the way a real disk does (a full disk, a save landing between two steps).
public protocol FileSystem: AnyObject {
    /// What stands at `path` itself (a link is not followed).
    func kind(at path: String) -> FileKind
    /// Whether `path` is a folder, following a link.
    func isFolder(_ path: String) -> Bool
    /// The whole file; nil when it is missing or cannot be read.
    func contents(at path: String) -> [UInt8]?
    /// The names in a folder (no `.` or `..`); nil when it is not a readable folder.
    func names(in folder: String) -> [String]?
    /// Makes a folder and any missing parents.
    func makeFolder(_ path: String) throws(FileSystemError)
    /// Creates or truncates `path` and writes `bytes` to it; with `durable`, synced before return.
    /// A failed write leaves no file behind.
    func writeFile(_ path: String, _ bytes: [UInt8], durable: Bool) throws(FileSystemError)
    /// Makes files written without `durable` durable (one file-system sync where that is cheaper).
    func makeDurable(_ paths: [String], under root: String)
    func rename(_ from: String, to: String) throws(FileSystemError)
    /// Swaps two paths (Linux `renameat2` RENAME_EXCHANGE).
    func exchange(_ first: String, _ second: String) throws(FileSystemError)
    /// Renames unless `to` exists (`renameat2` RENAME_NOREPLACE).
    func renameWithoutReplacing(_ from: String, to: String) throws(FileSystemError)
    /// Unlinks a file; nothing when it is missing.
    func removeFile(_ path: String)
    /// When the file was last modified.
    func modificationDate(_ path: String) -> Date?
    /// Writes `bytes` over the start of an existing file no shorter than them, padding the
    /// rest with spaces (a status file on a full disk: no new block needed); false when the
    /// file is missing, too short or cannot be written.
    func overwriteInPlace(_ path: String, with bytes: [UInt8]) -> Bool
}

/// What stands at a path.
public enum FileKind: Equatable, Sendable {
    case missing, file, folder, link
    /// A pipe, a device, a socket.
    case special
}

/// Why a file operation failed, in the terms callers decide on.
public enum FileSystemError: Error, Equatable, CustomStringConvertible {
    case notFound
    case exists
    /// The file system cannot do this (no RENAME_EXCHANGE on it).
    case unsupported
    case noSpace
    case other(String)

    public var description: String {
        switch self {
        case .notFound: "no such file or folder"
        case .exists: "file exists"
        case .unsupported: "not supported by the file system"
        case .noSpace: "no space left on device"
        case .other(let text): text
        }
    }
}
