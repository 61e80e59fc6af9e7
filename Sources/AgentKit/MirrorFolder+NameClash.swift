import Foundation
import SyncCore

/// File systems that take two names for one file: macOS (and ZFS with `normalization=formD`)
/// treat names that differ only in Unicode normalisation as the same name, case-insensitive
/// ones (macOS, ext4 with casefold) names that differ only in case. The server keeps such ids
/// apart; on such a file system only one of them can have a file, and the other is reported
/// instead of being read from, or written over, its twin's file.
extension MirrorFolder {
    /// Whether this file system takes names that differ only in normalisation or in case for
    /// one file: probed with a hidden file in the mirror's root (which the agent ignores). Nil
    /// while a probe cannot tell (it cannot write: a full disk); probed again next time.
    var foldsNames: Bool? {
        if let probedNameFolding { return probedNameFolding }
        let base = root + "/.plistsync-name-probe-\(UUID().uuidString.prefix(8))-"
        let probe = base + "zo\u{00EB}"
        guard (try? fileSystem.writeFile(probe, [], durable: false)) != nil else { return nil }
        defer { fileSystem.removeFile(probe) }
        let folds = fileSystem.kind(at: base + "zoe\u{0308}") != .missing || fileSystem.kind(at: base + "ZO\u{00CB}") != .missing
        probedNameFolding = folds
        return folds
    }

    /// The name of the file this file system finds for `id`'s path when that file is not named
    /// `id` byte for byte (it belongs to a twin id); nil when there is no such clash.
    /// (Unknown whether the file system folds names, the listing is looked at: that is right on
    /// any file system, only slower.)
    func clashingName(_ collection: String, _ id: RecordID) -> String? {
        guard foldsNames != false, fileSystem.kind(at: recordPath(collection, id)) != .missing else { return nil }
        let wanted = RecordID(id.string + ".plist")
        let names = fileSystem.names(in: folder(collection)) ?? []
        guard !names.contains(where: { RecordID($0) == wanted }) else { return nil }
        return names.first { $0.lowercased() == wanted.string.lowercased() } ?? "another file"
    }
}
