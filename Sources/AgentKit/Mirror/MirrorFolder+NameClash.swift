import Foundation
import SyncCore

/// File systems that take two names for one file: macOS (and ZFS with `normalization=formD`)
/// treat names that differ only in Unicode normalisation as the same name, case-insensitive
/// ones (macOS, ext4 with casefold) names that differ only in case. The server keeps such ids
/// apart; on such a file system only one of them can have a file, and the other is reported
/// instead of being read from, or written over, its twin's file.
extension MirrorFolder {
    /// Whether this file system takes names that differ only in normalisation or in case for
    /// one file: a probe file kept in the state folder is looked up under its other spellings.
    /// Nil while that cannot be told (the probe cannot be written: a full disk; tried again at
    /// most every 10 s).
    var foldsNames: Bool? {
        if let probedNameFolding { return probedNameFolding }
        let probe = stateFolder + "/name-probe-zo\u{00EB}"
        if fileSystem.kind(at: probe) == .missing {
            if let failed = nameProbeFailedAt, now().timeIntervalSince(failed) < 10 { return nil }
            try? fileSystem.makeFolder(stateFolder)
            guard (try? fileSystem.writeFile(probe, [], durable: false)) != nil else {
                nameProbeFailedAt = now()
                return nil
            }
        }
        let spellings = ["/name-probe-zoe\u{0308}", "/NAME-PROBE-ZO\u{00CB}"]
        let folds = spellings.contains { fileSystem.kind(at: stateFolder + $0) != .missing }
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
