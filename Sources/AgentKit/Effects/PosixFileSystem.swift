import CShims
import Foundation

/// The real file system, through POSIX calls (and `renameat2`, `syncfs` through CShims).
final class PosixFileSystem: FileSystem {
    init() {}

    func kind(at path: String) -> FileKind {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .folder
        case S_IFLNK: return .link
        default: return .special
        }
    }

    func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    func contents(at path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        // The size is a first guess: a file growing while it is read is read to its end.
        var bytes = [UInt8](repeating: 0, count: max(Int(info.st_size), 0) + 1)
        var filled = 0
        while true {
            if filled == bytes.count { bytes.append(contentsOf: repeatElement(0, count: max(bytes.count, 4096))) }
            let result = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if result < 0 {
                guard errno == EINTR else { return nil }
                continue
            }
            filled += result
            // Short of what was asked: the end of a regular file (no read to find it).
            if result == 0 || filled < bytes.count { break }
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    func names(in folder: String) -> [String]? {
        try? FileManager.default.contentsOfDirectory(atPath: folder)
    }

    func makeFolder(_ path: String) throws(FileSystemError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .other("cannot make \(path): \(error.localizedDescription)")
        }
    }

    func writeFile(_ path: String, _ bytes: [UInt8], durable: Bool) throws(FileSystemError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.failure(errno, "cannot create \(path)") }
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard result > 0 else {
                let failure = errno
                close(descriptor)
                unlink(path)
                throw Self.failure(failure, "cannot write \(path)")
            }
            written += result
        }
        if durable { fsync(descriptor) }
        close(descriptor)
    }

    /// Batches of at most this many files are synced file by file: syncfs also waits for
    /// everything else written to the file system (a server's log on the same disk).
    static let fsyncEachLimit = 4

    func makeDurable(_ paths: [String], under root: String) {
        guard !paths.isEmpty else { return }
        let descriptor = paths.count <= Self.fsyncEachLimit ? -1 : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if descriptor >= 0 { close(descriptor) } }
        guard descriptor < 0 || plistsync_syncfs(descriptor) != 0 else { return }
        for path in paths {
            let file = open(path, O_RDONLY | O_CLOEXEC)
            if file >= 0 {
                fsync(file)
                close(file)
            }
        }
    }

    func rename(_ from: String, to: String) throws(FileSystemError) {
        guard Glibc.rename(from, to) == 0 else { throw Self.failure(errno, "cannot rename onto \(to)") }
    }

    func exchange(_ first: String, _ second: String) throws(FileSystemError) {
        guard plistsync_rename_exchange(first, second) == 0 else { throw Self.failure(errno, "cannot swap \(first) and \(second)") }
    }

    func renameWithoutReplacing(_ from: String, to: String) throws(FileSystemError) {
        guard plistsync_rename_noreplace(from, to) == 0 else { throw Self.failure(errno, "cannot rename onto \(to)") }
    }

    func removeFile(_ path: String) {
        unlink(path)
    }

    func modificationDate(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    private static func failure(_ code: Int32, _ context: String) -> FileSystemError {
        switch code {
        case ENOENT: .notFound
        case EEXIST: .exists
        case EINVAL, ENOSYS: .unsupported
        case ENOSPC, EDQUOT: .noSpace
        default: .other("\(context): \(String(cString: strerror(code)))")
        }
    }

    func overwriteInPlace(_ path: String, with bytes: [UInt8]) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, Int(info.st_size) >= bytes.count else { return false }
        var padded = bytes
        padded.append(contentsOf: repeatElement(UInt8(ascii: " "), count: Int(info.st_size) - bytes.count))
        let written = padded.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return written == padded.count
    }
}
