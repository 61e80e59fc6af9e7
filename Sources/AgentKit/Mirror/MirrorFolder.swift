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
    /// Writes waiting for the end of the batch, by their paths compared by bytes (two names that
    /// differ only in Unicode normalisation are two files).
    var pending: [RecordID: (temp: String, bytes: [UInt8], guard: WriteGuard?)] = [:]

    /// Keeps a write from replacing a file someone saved after the write was decided (in a
    /// batch: checked at its end, after the sync).
    struct WriteGuard {
        /// The hash of the file the write was decided on; nil: there was no file.
        var expectedHash: String?
        /// Called when the file is no longer that one; the write is dropped.
        var onSuperseded: () -> Void = {}
    }
    var batchDepth = 0
    /// The next temp file's suffix: counted up from a random start, so names do not repeat while
    /// the agent runs (it holds the folder's lock) without a UUID per write.
    var nextTempSuffix = UInt32.random(in: .min ... .max)
    /// Runs between a guarded write's last look at the file and its replacing it: a test stands
    /// a save in that window.
    var beforeGuardedReplace: (() -> Void)?

    init(root: String, fileSystem: any FileSystem = PosixFileSystem(), now: @escaping () -> Date = Date.init) {
        self.root = root
        self.fileSystem = fileSystem
        self.now = now
    }

    var stateFolder: String { root + "/.plistsync" }
    /// Whether the file system takes names that differ only in normalisation or case for one
    /// file (`MirrorFolder+NameClash`), once a probe could tell.
    var probedNameFolding: Bool?
    var nameProbeFailedAt: Date?
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
    var touchedShadowPaths: Set<RecordID> = []

    func takeTouchedShadowPaths() -> [String] {
        defer { touchedShadowPaths.removeAll() }
        return touchedShadowPaths.map(\.string)
    }

    func noteWrite(_ path: String) {
        if !attachedCollections.isEmpty, path.hasPrefix(stateFolder + "/files/") { touchedShadowPaths.insert(RecordID(path)) }
    }
    func recordPath(_ collection: String, _ id: RecordID) -> String { folder(collection) + "/" + id.string + ".plist" }
    func orderPath(_ collection: String) -> String {
        attachedCollections.contains(collection) ? shadowFolder(collection) + ".order.plist" : root + "/" + collection + ".order.plist"
    }

    /// What every conflict copy's name holds (compared as bytes: a file event is not the place
    /// for Foundation's locale-aware search).
    static let conflictMarker = ".sync-conflict-"

    /// A record id for a file name, or nil when the file is not a record (hidden, temp, conflict
    /// copy, not `.plist`).
    static func recordID(forFileName name: String) -> RecordID? {
        guard name.hasSuffix(".plist"), !name.hasPrefix("."), !name.hasSuffix("~") else { return nil }
        // The id rule leaves out conflict copies (ids holding `conflictMarker`).
        let id = String(name.dropLast(6))
        return Names.isValidRecordID(id) ? RecordID(id) : nil
    }

    /// The id of a conflict copy (in the collection's conflicts companion) for a file name.
    static func conflictCopyID(forFileName name: String) -> RecordID? {
        guard name.hasSuffix(".plist"), !name.hasPrefix(".") else { return nil }
        let id = String(name.dropLast(6))
        return Names.isValidConflictCopyID(id) ? RecordID(id) : nil
    }

    /// A collection name for a folder entry of the root, or nil when it is not one.
    static func collectionName(forEntry name: String) -> String? {
        Names.isValidCollection(name) && !name.hasPrefix(".") ? name : nil
    }

    /// The record ids that have files in a collection's folder.
    /// (For a conflicts companion: the conflict copies in its collection's folder.)
    func recordIDs(in collection: String) -> [RecordID] {
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
        if let waiting = pending[RecordID(path)] { return waiting.bytes }
        return fileSystem.contents(at: path)
    }

    /// `read`, for a caller that has just looked at what stands at `path`: nothing on disk is
    /// not opened again (a write waiting in the batch is still found).
    func read(_ path: String, standing kind: EntryKind) -> [UInt8]? {
        switch kind {
        case .other: nil
        case .missing: pending[RecordID(path)]?.bytes
        case .file, .link: read(path)
        }
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
