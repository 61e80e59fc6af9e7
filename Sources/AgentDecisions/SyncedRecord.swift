import PlistFormat

/// What a mirror last agreed on with the server for one record: the base of its next push and
/// of three-way merges. Kept in the agent's state file.
public struct SyncedRecord: Equatable, Sendable {
    public var rev: Int64
    public var position: String?
    /// Canonical JSON of the synced fields; nil for a tombstone.
    public var fieldsJSON: String?
    /// Hash of the file as last seen or written; nil when no file should exist. A marker that
    /// matches no file (`SyncedRecord.compareFields`) makes the next look compare the fields.
    public var fileHash: String?
    public var format: PlistFile.Format

    public init(rev: Int64, position: String?, fieldsJSON: String?, fileHash: String?, format: PlistFile.Format) {
        self.rev = rev
        self.position = position
        self.fieldsJSON = fieldsJSON
        self.fileHash = fileHash
        self.format = format
    }

    public var isLive: Bool { fieldsJSON != nil }

    /// Live and with a file here: a missing file is then a delete (once the server has not
    /// refused that delete already).
    public var missingFileIsADelete: Bool { isLive && fileHash != nil && fileHash != Self.nameClash }

    /// Stands in for a file hash (after a merge, or a rebase on a restored store): matches no
    /// file, so the next look at the file compares its fields instead of trusting its hash.
    public static let compareFields = "merged"

    /// Stands in for a file hash when the record has no file here because this file system
    /// takes its name for a twin's (ids that differ only in Unicode normalisation or case): the
    /// file is written once the twin's is gone.
    public static let nameClash = "name-clash"

    /// Whether the record has no file of its own here for that reason (or none is expected), so
    /// a file found at its path may be a twin's.
    public var mayBeNameClash: Bool { fileHash == nil || fileHash == Self.nameClash }
}

/// What stands where a record's file belongs, as the decisions need to know it.
public enum LocalFile: Equatable, Sendable {
    case missing
    /// A symbolic link: never followed, pushed or read as a delete.
    case link
    /// A folder, a pipe, a device.
    case notAFile
    /// A file and its bytes.
    case file([UInt8])

    public var bytes: [UInt8]? {
        if case .file(let bytes) = self { bytes } else { nil }
    }
}
