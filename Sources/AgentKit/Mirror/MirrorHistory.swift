import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The conflict copies and kept versions of a mirror folder, for `plistsync conflicts`,
/// `resolve`, `versions` and `restore`. Works on the files only: a running agent (or the next
/// one to start) pushes what these change, like any other edit.
public struct MirrorHistory {
    private let mirror: MirrorFolder

    public init(directory: String) {
        self.init(directory: directory, fileSystem: PosixFileSystem())
    }

    init(directory: String, fileSystem: any FileSystem) {
        mirror = MirrorFolder(root: directory, fileSystem: fileSystem)
        // Attached app files keep their records, and conflict copies, in shadow folders.
        mirror.attachedCollections = Set(((try? AttachedFiles.load(directory: directory, in: fileSystem)) ?? []).map(\.collection))
    }

    /// A version of a record that lost a field conflict, saved beside it.
    public struct ConflictCopy: Equatable {
        public let collection: String
        public let recordID: String
        /// `YYYYMMDD-HHMMSS` (UTC), when the copy was made.
        public let stamp: String
        /// The machine whose version this is (with `-N` when it made several that second).
        public let device: String
        public let path: String
    }

    /// A record's file as it was before a remote change replaced or deleted it.
    public struct KeptVersion: Equatable {
        public let collection: String
        public let recordID: String
        /// `YYYYMMDD-HHMMSS` (UTC), with `-N` when several were kept that second.
        public let stamp: String
        public let path: String
    }

    /// The conflict copies in the given collections' folders (every collection when nil), by
    /// collection, record and stamp.
    public func conflicts(in collections: [String]? = nil) -> [ConflictCopy] {
        let names = collections ?? (mirror.collectionFolders() + mirror.attachedCollections.sorted())
        return names.flatMap { collection in
            mirror.recordIDs(in: Names.conflictsCollection(of: collection)).map(\.string).compactMap { stem in
                Self.parseConflictCopy(stem, collection: collection, path: mirror.folder(collection) + "/" + stem + ".plist")
            }
        }.sorted { ($0.collection, $0.recordID, $0.stamp, $0.device) < ($1.collection, $1.recordID, $1.stamp, $1.device) }
    }

    /// Splits `<id>.sync-conflict-<YYYYMMDD-HHMMSS>-<device>` at the first marker (an id never
    /// holds one), so a copy of a copy that older releases made belongs to its record too.
    static func parseConflictCopy(_ stem: String, collection: String, path: String) -> ConflictCopy? {
        guard let marker = stem.range(of: ".sync-conflict-") else { return nil }
        let rest = stem[marker.upperBound...]
        guard rest.count > 16, rest[rest.index(rest.startIndex, offsetBy: 15)] == "-" else { return nil }
        let stamp = String(rest.prefix(15))
        return ConflictCopy(collection: collection, recordID: String(stem[..<marker.lowerBound]), stamp: stamp,
                            device: String(rest.dropFirst(16)), path: path)
    }

    /// What `resolve` keeps as the record.
    public enum Choice {
        /// The record file as it is (the server's value): the copies go.
        case theirs
        /// The one conflict copy of the record.
        case mine
        /// Any plist file, e.g. one of several conflict copies or a hand-merged version.
        case file(String)
    }

    /// Settles a record's conflicts: writes the chosen version as the record (the replaced one
    /// is kept in the versions folder) and deletes every conflict copy of it. Returns the
    /// copies deleted.
    @discardableResult
    public func resolve(_ collection: String, _ id: String, keep choice: Choice) throws -> [ConflictCopy] {
        let copies = conflicts(in: [collection]).filter { RecordID($0.recordID) == RecordID(id) }
        let source: String?
        switch choice {
        case .theirs:
            guard !copies.isEmpty else { throw HistoryError("\(collection)/\(id) has no conflict copies") }
            source = nil
        case .mine:
            guard copies.count == 1 else {
                throw HistoryError(copies.isEmpty ? "\(collection)/\(id) has no conflict copies"
                    : "\(collection)/\(id) has \(copies.count) conflict copies; name one with --keep FILE:\n" + copies.map(\.path).joined(separator: "\n"))
            }
            source = copies[0].path
        case .file(let path):
            source = path
        }
        if let source {
            guard let bytes = mirror.fileSystem.contents(at: source) else { throw HistoryError("cannot read \(source)") }
            do {
                _ = try PlistFile.decodeRecord(bytes)
            } catch {
                throw HistoryError("\(source) is not a record (a plist dictionary): \(error)")
            }
            try replaceRecord(collection, id, with: bytes)
        }
        for copy in copies { mirror.fileSystem.removeFile(copy.path) }
        return copies
    }

    /// Kept versions of a record, oldest first.
    public func versions(_ collection: String, _ id: String) -> [KeptVersion] {
        let folder = mirror.stateFolder + "/versions/" + collection
        let names = mirror.fileSystem.names(in: folder) ?? []
        return names.compactMap { name -> KeptVersion? in
            // By bytes: `hasPrefix` would take a twin's versions (ids that differ only in
            // normalisation), and an id's length in characters is not its length in bytes.
            let prefix = Array((id + ".").utf8)
            guard name.utf8.starts(with: prefix), name.hasSuffix(".plist") else { return nil }
            let stamp = String(decoding: name.utf8.dropFirst(prefix.count).dropLast(6), as: UTF8.self)
            guard Self.isStamp(stamp) else { return nil }
            return KeptVersion(collection: collection, recordID: id, stamp: stamp, path: folder + "/" + name)
        }.sorted { Self.stampOrder($0.stamp) < Self.stampOrder($1.stamp) }
    }

    /// Puts a kept version (the newest when `stamp` is nil) back as the record; the current file
    /// is kept as a version first, so a restore can itself be undone.
    @discardableResult
    public func restore(_ collection: String, _ id: String, stamp: String? = nil) throws -> KeptVersion {
        let all = versions(collection, id)
        guard let version = stamp.map({ wanted in all.last { $0.stamp == wanted } }) ?? all.last else {
            throw HistoryError(stamp.map { "\(collection)/\(id) has no kept version \($0)" } ?? "\(collection)/\(id) has no kept versions")
        }
        guard let bytes = mirror.fileSystem.contents(at: version.path) else { throw HistoryError("cannot read \(version.path)") }
        try replaceRecord(collection, id, with: bytes)
        return version
    }

    private func replaceRecord(_ collection: String, _ id: String, with bytes: [UInt8]) throws {
        guard Names.isValidCollection(collection), Names.isValidRecordID(id) else { throw HistoryError("not a record: \(collection)/\(id)") }
        guard mirror.hasFolder(collection) else { throw HistoryError("\(mirror.folder(collection)) is not a mirrored collection folder") }
        mirror.keepVersion(collection, RecordID(id))
        do {
            try mirror.writeAtomically(bytes, to: mirror.recordPath(collection, RecordID(id)))
        } catch {
            throw HistoryError("cannot write \(mirror.recordPath(collection, RecordID(id))): \(error)")
        }
    }

    /// `YYYYMMDD-HHMMSS` or `YYYYMMDD-HHMMSS-N`.
    static func isStamp(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, parts[0].count == 8, parts[1].count == 6 else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }

    private static func stampOrder(_ stamp: String) -> (String, Int) {
        let parts = stamp.split(separator: "-")
        return (parts.prefix(2).joined(separator: "-"), parts.count > 2 ? Int(parts[2]) ?? 0 : 1)
    }
}

/// Why a conflict or version command could not do what was asked.
public struct HistoryError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
