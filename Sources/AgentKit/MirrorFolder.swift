import AgentDecisions
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The files of the mirror directory (DESIGN.md §5): record files, order files, conflict copies,
/// and kept versions. Every write is atomic: a hidden temp file in the same folder, made durable,
/// then renamed over the target.
///
/// Between `beginWrites()` and `endWrites()` the renames wait: all temp files of the batch are
/// made durable with one `syncfs` instead of one fsync each (a 10,000-record first sync would
/// otherwise spend most of its time in fsync), then renamed. Reads see the pending content.
final class MirrorFolder {
    let root: String
    /// Where the files live: the real file system, or a simulated one under test.
    let fileSystem: any FileSystem
    /// The time that stamps conflict copies, kept versions and dropped folders.
    let now: () -> Date
    private var pending: [String: (temp: String, bytes: [UInt8], guard: WriteGuard?)] = [:]

    /// Keeps a write from replacing a file someone saved after the write was decided (in a
    /// batch: checked at its end, after the sync).
    struct WriteGuard {
        /// The hash of the file the write was decided on; nil: there was no file.
        var expectedHash: String?
        /// Called when the file is no longer that one; the write is dropped.
        var onSuperseded: () -> Void = {}
    }
    private var batchDepth = 0
    /// Runs between a guarded write's last look at the file and its replacing it: a test stands
    /// a save in that window.
    var beforeGuardedReplace: (() -> Void)?

    init(root: String, fileSystem: any FileSystem = PosixFileSystem(), now: @escaping () -> Date = Date.init) {
        self.root = root
        self.fileSystem = fileSystem
        self.now = now
    }

    var stateFolder: String { root + "/.plistsync" }
    /// Collections mirrored through an app's file (`AttachedFile`): their records live in a
    /// hidden shadow folder, one file each, which the sync engine treats like any collection
    /// folder.
    var attachedCollections: Set<String> = []

    /// A collection's folder; a conflicts companion's copies live in its collection's folder.
    func folder(_ collection: String) -> String {
        let base = Names.collection(ofConflicts: collection) ?? collection
        return attachedCollections.contains(base) ? shadowFolder(base) : root + "/" + base
    }

    func shadowFolder(_ collection: String) -> String { stateFolder + "/files/" + collection }

    /// Whether a collection (or conflicts companion) lives in the shadow folder of an app's file.
    func isShadow(_ collection: String) -> Bool {
        attachedCollections.contains(Names.collection(ofConflicts: collection) ?? collection)
    }

    /// Shadow record paths written or removed since `takeTouchedShadowPaths()`: the app files are
    /// rebuilt from a cache, re-reading only these.
    private var touchedShadowPaths: Set<String> = []

    func takeTouchedShadowPaths() -> Set<String> {
        defer { touchedShadowPaths.removeAll() }
        return touchedShadowPaths
    }

    private func noteWrite(_ path: String) {
        if !attachedCollections.isEmpty, path.hasPrefix(stateFolder + "/files/") { touchedShadowPaths.insert(path) }
    }
    func recordPath(_ collection: String, _ id: String) -> String { folder(collection) + "/" + id + ".plist" }
    func orderPath(_ collection: String) -> String {
        attachedCollections.contains(collection) ? shadowFolder(collection) + ".order.plist" : root + "/" + collection + ".order.plist"
    }

    /// A record id for a file name, or nil when the file is not a record (hidden, temp, conflict
    /// copy, not `.plist`).
    static func recordID(forFileName name: String) -> String? {
        guard name.hasSuffix(".plist"), !name.hasPrefix("."), !name.hasSuffix("~"), !name.contains(".sync-conflict-") else {
            return nil
        }
        let id = String(name.dropLast(6))
        return Names.isValidRecordID(id) ? id : nil
    }

    /// The id of a conflict copy (in the collection's conflicts companion) for a file name.
    static func conflictCopyID(forFileName name: String) -> String? {
        guard name.hasSuffix(".plist"), !name.hasPrefix(".") else { return nil }
        let id = String(name.dropLast(6))
        return Names.isValidConflictCopyID(id) ? id : nil
    }

    /// A collection name for a folder entry of the root, or nil when it is not one.
    static func collectionName(forEntry name: String) -> String? {
        Names.isValidCollection(name) && !name.hasPrefix(".") ? name : nil
    }

    /// The record ids that have files in a collection's folder.
    /// (For a conflicts companion: the conflict copies in its collection's folder.)
    func recordIDs(in collection: String) -> [String] {
        let names = fileSystem.names(in: folder(collection)) ?? []
        let isCompanion = Names.collection(ofConflicts: collection) != nil
        return names.compactMap(isCompanion ? Self.conflictCopyID(forFileName:) : Self.recordID(forFileName:))
    }

    /// Subfolders of the root that can be collections (a link to a folder elsewhere is not one:
    /// the mirror never reaches outside its root).
    func collectionFolders() -> [String] {
        let names = fileSystem.names(in: root) ?? []
        return names.filter { Self.collectionName(forEntry: $0) != nil && hasFolder($0) && kind(at: folder($0)) != .link }
    }

    /// What stands at a path of the mirror, the path itself (a link is not followed).
    enum EntryKind {
        case missing, file, link
        /// A folder, a pipe, a device: never read as a record, never written over, never read
        /// as a deleted record either.
        case other
    }

    /// One `lstat` of `path`.
    func kind(at path: String) -> EntryKind {
        switch fileSystem.kind(at: path) {
        case .missing: .missing
        case .file: .file
        case .link: .link
        case .folder, .special: .other
        }
    }

    /// Whether the collection's folder exists (and is a folder).
    func hasFolder(_ collection: String) -> Bool {
        fileSystem.isFolder(folder(collection))
    }

    /// The hash of the file on disk now (not of a write waiting in the batch); nil when none.
    func diskHash(_ path: String) -> String? {
        fileSystem.contents(at: path).map(ContentHash.of)
    }

    func read(_ path: String) -> [UInt8]? {
        if let waiting = pending[path] { return waiting.bytes }
        return fileSystem.contents(at: path)
    }

    func beginWrites() {
        batchDepth += 1
    }

    /// Makes the batch's files durable with one sync, then renames them into place.
    func endWrites() {
        guard batchDepth > 0 else { return }
        batchDepth -= 1
        guard batchDepth == 0, !pending.isEmpty else { return }
        fileSystem.makeDurable(pending.values.map(\.temp), under: root)
        let batch = pending
        pending.removeAll()
        for (path, entry) in batch {
            if let writeGuard = entry.guard {
                if !replace(entry.temp, holding: entry.bytes, onto: path, expecting: writeGuard.expectedHash) { writeGuard.onSuperseded() }
            } else {
                do {
                    try fileSystem.rename(entry.temp, to: path)
                } catch {
                    AgentLog.info("cannot rename onto \(path): \(error)")
                    fileSystem.removeFile(entry.temp)
                }
            }
        }
    }

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

    /// A temp file's path beside `path` (`.<name>.plistsync-XXXXXXXX`).
    private func temporaryPath(for path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory + "/.\((path as NSString).lastPathComponent).plistsync-\(UUID().uuidString.prefix(8))"
    }

    /// Whether a file name is one of this agent's temp files (`.<name>.plistsync-XXXXXXXX`).
    static func isTempFile(_ name: String) -> Bool {
        guard name.hasPrefix("."), let marker = name.range(of: ".plistsync-", options: .backwards) else { return false }
        let suffix = name[marker.upperBound...]
        return suffix.count == 8 && suffix.allSatisfy(\.isHexDigit)
    }

    /// Deletes temp files a killed agent left behind (in the root, the collection folders and
    /// the versions): only this agent writes them, and it holds the folder's lock.
    func removeStaleTempFiles() {
        let folders = [root] + collectionFolders().map(folder) + [stateFolder]
            + (fileSystem.names(in: stateFolder + "/versions") ?? []).map { stateFolder + "/versions/" + $0 }
        for folder in folders {
            for name in fileSystem.names(in: folder) ?? [] where Self.isTempFile(name) {
                fileSystem.removeFile(folder + "/" + name)
            }
        }
    }

    func ensureFolder(_ path: String) throws(FileSystemError) {
        try fileSystem.makeFolder(path)
    }

    /// Writes `bytes` to `path` atomically and durably. Throws, having changed nothing, when the
    /// temp file cannot be written (a full disk) or a folder stands where the file goes, so a
    /// caller never records as applied what is not on disk.
    ///
    /// With a `WriteGuard`, a file a person saved while the write was being prepared is left as
    /// it is (outside a batch the write then throws `MirrorError.superseded`).
    func writeAtomically(_ bytes: [UInt8], to path: String, guard writeGuard: WriteGuard? = nil) throws {
        noteWrite(path)
        guard kind(at: path) != .other else { throw MirrorError.io("\(path) is a folder or special file, not a record file") }
        let temp = temporaryPath(for: path)
        do {
            try fileSystem.writeFile(temp, bytes, durable: batchDepth == 0)
        } catch {
            throw MirrorError.io("cannot write \(temp): \(error)")
        }
        if batchDepth > 0 {
            // A second write of one path in a batch keeps the first one's guard: that one was
            // decided on the file that is on disk.
            let replaced = pending[path]
            pending[path] = (temp, bytes, replaced.map(\.guard) ?? writeGuard)
            if let replaced { fileSystem.removeFile(replaced.temp) }
            return
        }
        if let writeGuard {
            guard replace(temp, holding: bytes, onto: path, expecting: writeGuard.expectedHash) else {
                writeGuard.onSuperseded()
                throw MirrorError.superseded(path)
            }
            return
        }
        do {
            try fileSystem.rename(temp, to: path)
        } catch {
            fileSystem.removeFile(temp)
            throw MirrorError.io("cannot rename onto \(path): \(error)")
        }
    }

    /// Puts `temp` (holding `bytes`) in place of `path` unless the file there is no longer the
    /// one with `expected` hash; false (temp removed, nothing replaced) when it is not. Linux has no
    /// compare-and-rename, so a save landing between the last look and the rename would be
    /// lost: the files are swapped instead (RENAME_EXCHANGE; RENAME_NOREPLACE when there was no
    /// file), and what comes out is checked; a file that is not the expected one goes back.
    private func replace(_ temp: String, holding bytes: [UInt8], onto path: String, expecting expected: String?) -> Bool {
        guard diskHash(path) == expected else {
            fileSystem.removeFile(temp)
            return false
        }
        beforeGuardedReplace?()
        guard let expected else {
            do {
                try fileSystem.renameWithoutReplacing(temp, to: path)
                return true
            } catch .exists {
                fileSystem.removeFile(temp)
                return false
            } catch .unsupported {
                return renameOrRemove(temp, onto: path)
            } catch {
                return cannotRename(temp, path, error)
            }
        }
        do {
            try fileSystem.exchange(temp, path)
        } catch .notFound {
            // Deleted meanwhile: a delete is a change too; the write waits for it to be read.
            fileSystem.removeFile(temp)
            return false
        } catch .unsupported {
            return renameOrRemove(temp, onto: path)
        } catch {
            return cannotRename(temp, path, error)
        }
        // `temp` now holds what was in place: the expected file, or a save that came just now.
        if diskHash(temp) == expected {
            fileSystem.removeFile(temp)
            return true
        }
        // Put the save back. Should yet another save have replaced the written file meanwhile,
        // the swap brings out that one instead: swapped again, the newest save is in place.
        if (try? fileSystem.exchange(temp, path)) != nil, diskHash(temp) != ContentHash.of(bytes) {
            try? fileSystem.exchange(temp, path)
        }
        fileSystem.removeFile(temp)
        return false
    }

    /// The plain rename where the file system cannot swap (the check above is then the guard).
    private func renameOrRemove(_ temp: String, onto path: String) -> Bool {
        do {
            try fileSystem.rename(temp, to: path)
            return true
        } catch {
            return cannotRename(temp, path, error)
        }
    }

    private func cannotRename(_ temp: String, _ path: String, _ failure: FileSystemError) -> Bool {
        AgentLog.info("cannot rename onto \(path): \(failure)")
        fileSystem.removeFile(temp)
        return false
    }

    func remove(_ path: String) {
        noteWrite(path)
        if let waiting = pending.removeValue(forKey: path) { fileSystem.removeFile(waiting.temp) }
        fileSystem.removeFile(path)
    }

    /// Removes the file the removal was decided on, and only that one: the file is renamed aside
    /// and looked at, and a save that landed meanwhile is put back (throws
    /// `MirrorError.superseded`). A write of the path waiting in the batch is dropped; its guard,
    /// decided on the file on disk, is the one that counts.
    func remove(_ path: String, guard writeGuard: WriteGuard) throws {
        noteWrite(path)
        let waiting = pending.removeValue(forKey: path)
        if let waiting { fileSystem.removeFile(waiting.temp) }
        let removalGuard = waiting.map { $0.guard ?? writeGuard } ?? writeGuard
        guard takeAway(path, expecting: removalGuard.expectedHash) else {
            removalGuard.onSuperseded()
            throw MirrorError.superseded(path)
        }
    }

    /// Removes `path` if it is the file with `expected` hash; false (nothing removed) if not.
    private func takeAway(_ path: String, expecting expected: String?) -> Bool {
        guard diskHash(path) == expected else { return false }
        beforeGuardedReplace?()
        let aside = temporaryPath(for: path)
        do {
            try fileSystem.rename(path, to: aside)
        } catch {
            return error == .notFound
        }
        if diskHash(aside) == expected {
            fileSystem.removeFile(aside)
            return true
        }
        // A save came just now: it goes back, unless a newer one is in place already.
        do {
            try fileSystem.renameWithoutReplacing(aside, to: path)
        } catch .unsupported {
            try? fileSystem.rename(aside, to: path)
        } catch {
            fileSystem.removeFile(aside)
        }
        return false
    }

    /// Keeps the current file of a record in `.plistsync/versions/` before it is overwritten or
    /// deleted by a remote change: `<id>.<stamp>.plist`, or `<id>.<stamp>-<n>.plist` when that
    /// second already has one, so no kept version ever replaces another.
    func keepVersion(_ collection: String, _ id: String) {
        let path = recordPath(collection, id)
        guard let bytes = read(path) else { return }
        let folder = stateFolder + "/versions/" + collection
        try? ensureFolder(folder)
        let stamp = Self.stamp(now())
        let target = unusedPath { counter in folder + "/" + id + "." + stamp + (counter > 1 ? "-\(counter)" : "") + ".plist" }
        try? writeAtomically(bytes, to: target)
    }

    /// The first of `candidate(1)`, `candidate(2)`, … that is neither on disk nor waiting in the
    /// current batch.
    private func unusedPath(_ candidate: (Int) -> String) -> String {
        var counter = 1
        while true {
            let path = candidate(counter)
            if pending[path] == nil, fileSystem.kind(at: path) == .missing { return path }
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
    func writeConflictCopy(_ bytes: [UInt8], _ collection: String, _ id: String, device: String) throws -> String {
        let stamp = Self.stamp(now())
        let path = unusedPath { counter in
            folder(collection) + "/" + Self.conflictCopyName(id: id, stamp: stamp, device: counter > 1 ? "\(device)-\(counter)" : device)
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

/// A file operation of the mirror that failed.
enum MirrorError: Error, CustomStringConvertible {
    case io(String)
    /// The target changed while the write was being prepared; it was left as it is.
    case superseded(String)
    var description: String {
        switch self {
        case .io(let text): text
        case .superseded(let path): "\(path) changed while it was being written; left as it is"
        }
    }
}
