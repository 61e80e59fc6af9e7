import PlistFormat
import SyncCore
import SyncProtocol

/// What to do about a record's file compared with what was last synced (DESIGN.md §5): push
/// it, take note of it, report it, or leave it. Pure: the agent reads the file and the state,
/// this decides, the agent carries it out.
public enum LocalChange: Equatable, Sendable {
    /// A symbolic link stands there: reported, never followed, pushed or deleted.
    case symbolicLink
    /// A folder or special file stands there: reported, not synced.
    case notAFile
    /// The file is missing; `deletable`: it was live here, so the delete goes to the server
    /// once it has settled.
    case missing(deletable: Bool)
    /// Nothing to do: the file is as synced, or the server refused these bytes already.
    case unchanged
    /// The file does not parse (a save in progress, a broken file): never pushed.
    case unparseable(String)
    /// The bytes changed but not the fields (reformatted, rewritten as binary): the new hash
    /// and format are noted, nothing is sent.
    case adopt(hash: String, format: PlistFile.Format)
    /// Over the server's record or line limit: reported, not sent until the file changes
    /// (`hash`).
    case tooLarge(bytes: Int, hash: String)
    /// The record had no file here only because a twin's file stood at its path (this file
    /// system folds names), and that file is gone: the synced state is written as its file.
    case writeSynced
    /// An edit (or a new record, base rev 0) to push.
    case push(Command, hash: String, fieldsJSON: String, format: PlistFile.Format)

    /// Decides for the file of `collection/id`. `refusedHash`: bytes the server refused, or a
    /// change could not be written over (the same push would fail again); `deleteRefused`: the
    /// server refused this record's delete, so a missing file is not a delete again.
    public static func decide(collection: String, id: RecordID, file: LocalFile, synced: SyncedRecord?, refusedHashes: Set<String>,
                              deleteRefused: Bool, maxRecordBytes: Int, maxLineBytes: Int) -> LocalChange {
        let bytes: [UInt8]
        switch file {
        case .link: return .symbolicLink
        case .notAFile: return .notAFile
        case .missing:
            if let synced, synced.isLive, synced.fileHash == SyncedRecord.nameClash { return .writeSynced }
            return .missing(deletable: synced?.missingFileIsADelete == true && !deleteRefused)
        case .file(let read): bytes = read
        }
        let hash = ContentHash.of(bytes)
        guard synced?.fileHash != hash, !refusedHashes.contains(hash) else { return .unchanged }
        let fields: Fields
        let format: PlistFile.Format
        do {
            (fields, format) = try PlistFile.decodeRecord(bytes)
        } catch {
            return .unparseable(error.description)
        }
        var json = ValueJSON.encode(fields: fields)
        // XML floors dates to the second: a date whose second is unchanged keeps the fraction
        // that was synced.
        if format == .xml, let stored = synced?.fieldsJSON, stored != json, let syncedFields = try? ValueJSON.decodeFields(Array(stored.utf8)),
            case .dictionary(let restored) = PlistFile.restoringSubsecondDates(.dictionary(fields), from: .dictionary(syncedFields))
        {
            json = ValueJSON.encode(fields: restored)
        }
        if synced?.fieldsJSON == json { return .adopt(hash: hash, format: format) }
        let command = Command.put(collection: collection, id: id.string, baseRev: synced?.rev ?? 0, fieldsJSON: json)
        // Checked here, not by the server: a line over its limit would end the connection.
        guard json.utf8.count <= maxRecordBytes, command.requestText.utf8.count + 40 <= maxLineBytes else { return .tooLarge(bytes: json.utf8.count, hash: hash) }
        return .push(command, hash: hash, fieldsJSON: json, format: format)
    }
}
