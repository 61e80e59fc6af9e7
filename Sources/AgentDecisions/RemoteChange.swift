import PlistFormat
import SyncCore
import SyncProtocol

/// What to do about a record's state from the server (a change, a replay line, or the state a
/// CONFLICT reply names) given what was last synced and the file here now (DESIGN.md §5):
/// take it, merge it with a local edit, keep an edit over a delete, or only note a position.
/// Pure: the agent reads the file and the state, this decides, the agent writes.
public enum RemoteChange: Equatable, Sendable {
    /// The server never had the record (`0 - MISSING`): forget what was synced; the file goes
    /// up as a new record.
    case forget
    /// A store restored from an older backup sent a state older than the one synced here: it
    /// becomes the base, so the next look at the file pushes what this mirror holds.
    case rebase(SyncedRecord)
    /// Nothing new (this mirror's own change coming back, or an older state); the synced
    /// record with a new position when only that changed.
    case nothingNew(movedTo: SyncedRecord?)
    /// The file is being saved (it does not parse yet): the change waits for the save.
    case waitForSave
    /// Two machines made a conflict copy of one name: this one moves to a free name first.
    case moveCopyAside
    /// The record's path leads to a twin's file on this file system (`Context.nameClash`): the
    /// state is recorded without a file of its own here, and that file is neither read nor
    /// written.
    case nameClash(SyncedRecord)
    /// Applied: `next` is what is synced afterwards (its file hash set by the writer for
    /// `take` and `restore`), `action` what happens to the file.
    case apply(next: SyncedRecord, action: Action)

    /// What applying a change does to the file.
    public enum Action: Equatable, Sendable {
        /// Nothing typed here since the last sync: the server's fields are written (`keepFile`:
        /// the file there is kept in the versions folder first).
        case take(Fields, keepFile: Bool)
        /// Deleted on the server, nothing typed here: the file is removed (kept first).
        case remove
        /// Deleted on both sides: nothing to do.
        case bothDeleted
        /// Edited on both sides: three-way merge of the file with the server's fields against
        /// the synced state (the file is kept first). `baseKnown` false: the two have no known
        /// common state (a store restored from an older backup holds a state another mirror
        /// made since, and this file may hold one the store lost), so every field in which
        /// they differ is a conflict.
        case merge(local: [UInt8], remote: Fields, baseKnown: Bool = true)
        /// Deleted here, edited there: the edit wins and the record comes back.
        case restore(Fields)
        /// Edited here, deleted there: the edit wins and goes up again.
        case keepEdit
        /// Deleted here, only moved there: the delete goes up again against the new rev.
        case keepDelete
    }

    /// How long a file that does not parse counts as a save in progress: a change for it waits
    /// that long; after that the file is kept as a conflict copy like any broken file.
    public static let saveSettleSeconds: Double = 10

    /// Where a state comes from and what is known around it.
    public struct Context: Equatable, Sendable {
        /// The state is what a CONFLICT reply named (the server's record now).
        public var fromConflict = false
        /// The seq of the change, when it came as one.
        public var seq: Int64?
        /// The collection is being brought forward onto a store restored from a backup that
        /// ended at `restoredSeq` (nil: unknown, every replayed state is the backup's).
        public var rebasing = false
        public var restoredSeq: Int64?
        /// The collection is a conflicts companion (`<c>~conflicts`).
        public var isConflictCopies = false
        /// The collection lives in the shadow folder of an app's file (written as binary:
        /// XML would floor the app's dates).
        public var isShadow = false
        /// Seconds since the file was last modified.
        public var fileAge: Double?
        /// The record's path leads to another record's file (this file system folds names).
        public var nameClash = false

        public init(fromConflict: Bool = false, seq: Int64? = nil, rebasing: Bool = false, restoredSeq: Int64? = nil,
                    isConflictCopies: Bool = false, isShadow: Bool = false, fileAge: Double? = nil, nameClash: Bool = false) {
            self.fromConflict = fromConflict
            self.seq = seq
            self.rebasing = rebasing
            self.restoredSeq = restoredSeq
            self.isConflictCopies = isConflictCopies
            self.isShadow = isShadow
            self.fileAge = fileAge
            self.nameClash = nameClash
        }
    }

    /// Decides for `remote` given `synced` (what was last synced) and `local` (the file's
    /// bytes; nil when there is none).
    public static func decide(_ remote: RemoteState, synced: SyncedRecord?, local: [UInt8]?, context: Context) -> RemoteChange {
        if remote.rev == 0 { return .forget }
        let remoteJSON = remote.fields.map { ValueJSON.encode(fields: $0) }
        if context.nameClash {
            // An older state (a change line sent again, simulation seed 212) is old news here too.
            if let synced, remote.rev < synced.rev, !context.rebasing, !context.fromConflict { return .nothingNew(movedTo: nil) }
            return .nameClash(SyncedRecord(rev: remote.rev, position: remote.position, fieldsJSON: remoteJSON,
                                           fileHash: remote.isLive ? SyncedRecord.nameClash : nil, format: synced?.format ?? .xml))
        }
        // On a restored store a state of the backup (at or below where it ended) that is older
        // than what was synced here becomes the base; a state made since the restore by someone
        // else, or a CONFLICT naming an older rev, is news, merged like a newer change.
        let fromBackup = context.rebasing && !context.fromConflict && (context.seq ?? 0) <= (context.restoredSeq ?? Int64.max)
        if let synced, remote.rev < synced.rev, fromBackup {
            return .rebase(SyncedRecord(rev: remote.rev, position: remote.position, fieldsJSON: remoteJSON,
                                        fileHash: remote.isLive ? SyncedRecord.compareFields : nil, format: synced.format))
        }
        let news = context.rebasing && !fromBackup && remoteJSON != synced?.fieldsJSON || context.fromConflict && remote.rev != synced?.rev
        let divergedAtSameRev = context.rebasing && remote.rev == synced?.rev && remoteJSON != synced?.fieldsJSON
        if let synced, isNoNewer(remote.rev, than: synced.rev), !news, !divergedAtSameRev {
            // The same content under an older rev of the restored store's line (someone pushed
            // what this mirror has): that rev is the one to build on; the rev synced here names
            // a state the store no longer knows, and would hide its later changes as old.
            if context.rebasing, remote.rev < synced.rev {
                return .rebase(SyncedRecord(rev: remote.rev, position: remote.position, fieldsJSON: remoteJSON,
                                            fileHash: synced.fileHash, format: synced.format))
            }
            guard remote.rev == synced.rev, remote.isLive, synced.isLive, synced.position != remote.position else { return .nothingNew(movedTo: nil) }
            var moved = synced
            moved.position = remote.position
            return .nothingNew(movedTo: moved)
        }
        let localHash = local.map(ContentHash.of)
        // A record that had no file of its own here (its name was a twin's) and has none now
        // was not deleted here: its file is written (simulation seed 1101: its change was
        // taken for a move of a record deleted here, the delete went up, and a record nobody
        // deleted was gone).
        let hadNoFile = synced?.fileHash == SyncedRecord.nameClash && local == nil
        let locallyChanged = localHash != synced?.fileHash && !hadNoFile
        // The file is parsed only where a rule needs its fields (most changes are taken whole).
        let localFields = { local.flatMap { try? PlistFile.decodeRecord($0).0 } }
        if locallyChanged, local != nil, remote.isLive, let age = context.fileAge, age < saveSettleSeconds, localFields() == nil {
            return .waitForSave
        }
        if context.isConflictCopies, synced?.isLive != true, local != nil, let remoteFields = remote.fields, localFields() != remoteFields {
            return .moveCopyAside
        }
        let format: PlistFile.Format = context.isShadow ? .binary : synced?.format ?? local.flatMap { try? PlistFile.decode($0).1 } ?? .xml
        var next = SyncedRecord(rev: remote.rev, position: remote.position, fieldsJSON: remoteJSON, fileHash: nil, format: format)
        // A state another mirror brought to the restored store, before this one brought its
        // own: the file may hold what this mirror synced after the backup, which the store
        // lost. It is no newer state of the file: merged as an edit, with no common base.
        let olderCopyOnRestoredStore = context.rebasing && !fromBackup && !context.fromConflict && synced?.isLive == true
        // Nor is a state recorded while a twin's file held the name (a folding file system): it
        // was never in a file here, so a file made under the name since never saw it (seed 2412).
        let neverWrittenHere = synced?.fileHash == SyncedRecord.nameClash && synced?.isLive == true
        let noCommonBase = (olderCopyOnRestoredStore || neverWrittenHere) && local != nil
        let action: Action
        switch (local, remote.fields) {
        case (_, let fields?) where !locallyChanged && !noCommonBase:
            action = .take(fields, keepFile: local != nil)
        case (nil, nil):
            action = .bothDeleted
        case (_?, nil) where !locallyChanged && context.rebasing && !fromBackup && synced?.isLive == true:
            // Deleted on the restored store by a mirror that brought forward an older state,
            // while this one holds a record it synced after the backup: had it reconnected
            // first, its record would have gone up and beaten that delete. It goes up now.
            action = .keepEdit
        case (_?, nil) where !locallyChanged:
            action = .remove
        case (let bytes?, let fields?):
            action = .merge(local: bytes, remote: fields, baseKnown: !noCommonBase)
            next.fileHash = SyncedRecord.compareFields
        case (nil, _?) where remoteJSON == synced?.fieldsJSON:
            // Deleted here, only moved there: the delete stands and goes up against the new rev
            // (only an edit of the fields beats a delete).
            action = .keepDelete
            next.fileHash = SyncedRecord.compareFields
        case (nil, let fields?):
            action = .restore(fields)
        case (_?, nil):
            // The file goes up as the record's new state, whatever it holds: even the bytes it
            // had when last synced (an edit cancelled since) are news to a store that deleted it.
            action = Self.editOverDelete
        }
        return .apply(next: next, action: action)
    }

    /// What an edit here meets when the server deleted the record: it wins and goes up again.
    private static var editOverDelete: Action {
        #if SIMULATION_MUTATIONS
        if Mutation.active == .deleteBeatsEdit { return .remove }
        #endif
        return .keepEdit
    }

    /// Whether a state of revision `remote` is no newer than the one synced here.
    private static func isNoNewer(_ remote: Int64, than synced: Int64) -> Bool {
        #if SIMULATION_MUTATIONS
        if Mutation.active == .olderChangeTaken { return remote == synced }
        #endif
        return remote <= synced
    }
}
