import AgentDecisions
import Foundation
import SyncCore

/// Atomic writes (temp file, made durable, renamed; in a batch one sync for all), and the
/// guarded replace and remove that never undo a save made after they were decided.
extension MirrorFolder {
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
        for (key, entry) in batch {
            let path = key.string
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

    /// A temp file's path beside `path` (`.<name>.plistsync-XXXXXXXX`).
    func temporaryPath(for path: String) -> String {
        nextTempSuffix &+= 1
        let hex = String(nextTempSuffix, radix: 16, uppercase: true)
        let suffix = String(repeating: "0", count: 8 - hex.utf8.count) + hex
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ".\(path).plistsync-\(suffix)" }
        let name = path.utf8.index(after: slash)
        return "\(path[..<name]).\(path[name...]).plistsync-\(suffix)"
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
            let replaced = pending[RecordID(path)]
            pending[RecordID(path)] = (temp, bytes, replaced.map(\.guard) ?? writeGuard)
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
    func replace(_ temp: String, holding bytes: [UInt8], onto path: String, expecting expected: String?) -> Bool {
        guard let expected else { return placeNew(temp, onto: path) }
        guard diskHash(path) == expected else {
            fileSystem.removeFile(temp)
            return false
        }
        beforeGuardedReplace?()
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

    /// Puts `temp` where no file stood when the write was decided; false (temp removed) when one
    /// stands there now. RENAME_NOREPLACE is the check (no look first: a lookup a new record).
    func placeNew(_ temp: String, onto path: String) -> Bool {
        beforeGuardedReplace?()
        do {
            try fileSystem.renameWithoutReplacing(temp, to: path)
            return true
        } catch .exists {
            fileSystem.removeFile(temp)
            return false
        } catch .unsupported {
            guard diskHash(path) == nil else {
                fileSystem.removeFile(temp)
                return false
            }
            return renameOrRemove(temp, onto: path)
        } catch {
            return cannotRename(temp, path, error)
        }
    }

    /// The plain rename where the file system cannot swap (the check above is then the guard).
    func renameOrRemove(_ temp: String, onto path: String) -> Bool {
        do {
            try fileSystem.rename(temp, to: path)
            return true
        } catch {
            return cannotRename(temp, path, error)
        }
    }

    func cannotRename(_ temp: String, _ path: String, _ failure: FileSystemError) -> Bool {
        AgentLog.info("cannot rename onto \(path): \(failure)")
        fileSystem.removeFile(temp)
        return false
    }

    func remove(_ path: String) {
        noteWrite(path)
        if let waiting = pending.removeValue(forKey: RecordID(path)) { fileSystem.removeFile(waiting.temp) }
        fileSystem.removeFile(path)
    }

    /// Removes the file the removal was decided on, and only that one: the file is renamed aside
    /// and looked at, and a save that landed meanwhile is put back (throws
    /// `MirrorError.superseded`). A write of the path waiting in the batch is dropped; its guard,
    /// decided on the file on disk, is the one that counts.
    func remove(_ path: String, guard writeGuard: WriteGuard) throws {
        noteWrite(path)
        let waiting = pending.removeValue(forKey: RecordID(path))
        if let waiting { fileSystem.removeFile(waiting.temp) }
        let removalGuard = waiting.map { $0.guard ?? writeGuard } ?? writeGuard
        guard takeAway(path, expecting: removalGuard.expectedHash) else {
            removalGuard.onSuperseded()
            throw MirrorError.superseded(path)
        }
    }

    /// Removes `path` if it is the file with `expected` hash; false (nothing removed) if not.
    func takeAway(_ path: String, expecting expected: String?) -> Bool {
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
}
