import AgentDecisions
import Foundation
import SyncCore
import SyncProtocol

/// What the mirror keeps aside: dropped collections, kept versions of files a remote change
/// replaced, and conflict copies with names that never clash or nest.
extension MirrorFolder {
    /// Moves a collection's folder and order file out of the way, to
    /// `.plistsync/dropped/<collection>-<stamp>/`; the folder it went to, or nil when there was
    /// nothing to move or it could not be moved.
    func archive(_ collection: String) -> String? {
        guard hasFolder(collection) else { return nil }
        let parent = stateFolder + "/dropped"
        let stamp = Self.stamp(now())
        let target = unusedPath { counter in parent + "/" + collection + "-" + stamp + (counter > 1 ? "-\(counter)" : "") }
        guard (try? ensureFolder(parent)) != nil, (try? fileSystem.rename(folder(collection), to: target)) != nil else { return nil }
        try? fileSystem.rename(orderPath(collection), to: target + "/" + collection + ".order.plist")
        return target
    }

    /// Gives a collection's folder and order file a new name; false when the new name is taken
    /// here (a folder of that name the agent has not synced) or the rename fails.
    func renameCollection(_ from: String, to: String) -> Bool {
        guard hasFolder(from), kind(at: folder(to)) == .missing else { return false }
        guard (try? fileSystem.rename(folder(from), to: folder(to))) != nil else { return false }
        if kind(at: orderPath(from)) == .file, kind(at: orderPath(to)) == .missing { try? fileSystem.rename(orderPath(from), to: orderPath(to)) }
        return true
    }

    /// Keeps the current file of a record in `.plistsync/versions/` before it is overwritten or
    /// deleted by a remote change: `<id>.<stamp>.plist`, or `<id>.<stamp>-<n>.plist` when that
    /// second already has one, so no kept version ever replaces another.
    func keepVersion(_ collection: String, _ id: RecordID) {
        let path = recordPath(collection, id)
        guard let bytes = read(path) else { return }
        let folder = stateFolder + "/versions/" + collection
        try? ensureFolder(folder)
        let stamp = Self.stamp(now())
        let target = unusedPath { counter in folder + "/" + id.string + "." + stamp + (counter > 1 ? "-\(counter)" : "") + ".plist" }
        try? writeAtomically(bytes, to: target)
    }

    /// The first of `candidate(1)`, `candidate(2)`, … that is neither on disk nor waiting in the
    /// current batch.
    func unusedPath(_ candidate: (Int) -> String) -> String {
        var counter = 1
        while true {
            let path = candidate(counter)
            if pending[RecordID(path)] == nil, fileSystem.kind(at: path) == .missing { return path }
            counter += 1
        }
    }

    /// Deletes kept versions older than `days`.
    func pruneVersions(olderThan days: Int) {
        let base = stateFolder + "/versions"
        let cutoff = now().addingTimeInterval(-Double(days) * 86_400)
        for collection in fileSystem.names(in: base) ?? [] {
            let folder = base + "/" + collection
            for name in fileSystem.names(in: folder) ?? [] where name.hasSuffix(".plist") {
                if let modified = fileSystem.modificationDate(folder + "/" + name), modified < cutoff { fileSystem.removeFile(folder + "/" + name) }
            }
        }
    }

    /// Saves a local version that lost a field conflict beside the record. A second loser in the
    /// same second gets `-2`, `-3`, … after the device name instead of replacing the first.
    func writeConflictCopy(_ bytes: [UInt8], _ collection: String, _ id: RecordID, device: String) throws -> String {
        let stamp = Self.stamp(now())
        let path = unusedPath { counter in
            folder(collection) + "/" + Self.conflictCopyName(id: id.string, stamp: stamp, device: counter > 1 ? "\(device)-\(counter)" : device)
        }
        try writeAtomically(bytes, to: path)
        return path
    }

    /// Renames a conflict copy `<stem>.plist` to the first free `<stem>-N.plist` (N from 2);
    /// the new path, or nil when it cannot be renamed.
    func moveConflictCopyAside(_ path: String) -> String? {
        let stem = String(path.dropLast(6))
        let target = unusedPath { counter in stem + "-\(counter + 1).plist" }
        guard MirrorFolder.conflictCopyID(forFileName: (target as NSString).lastPathComponent) != nil,
            (try? fileSystem.renameWithoutReplacing(path, to: target)) != nil
        else { return nil }
        noteWrite(path)
        noteWrite(target)
        return target
    }

    /// Longest file name Linux and macOS file systems take, in bytes.
    static let maxFileNameBytes = 255

    /// `<id>.sync-conflict-<stamp>-<device>.plist`, with the id (then the device) shortened on a
    /// character boundary when the whole would pass the file-name limit: a 200-byte id must not
    /// make the copy impossible to write.
    static func conflictCopyName(id: String, stamp: String, device: String) -> String {
        func fits(_ text: String, _ budget: Int) -> String {
            var result = ""
            for character in text where result.utf8.count + character.utf8.count <= budget { result.append(character) }
            return result
        }
        let safeDevice = fits(device, 64)
        let suffix = ".sync-conflict-" + stamp + "-" + safeDevice + ".plist"
        return fits(id, maxFileNameBytes - suffix.utf8.count) + suffix
    }

    /// `YYYYMMDD-HHMMSS` in UTC.
    static func stamp(_ date: Date) -> String {
        let iso = ISO8601UTC.format(Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
        let digits = iso.filter(\.isNumber)
        return String(digits.prefix(8)) + "-" + String(digits.dropFirst(8).prefix(6))
    }
}
