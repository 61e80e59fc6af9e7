import Foundation
import SQLiteKit
import SyncCore
import SyncProtocol

/// Applies batches of writes in one transaction each: the group commit.
///
/// Runs on the thread pool, one batch at a time (the committer guarantees it). Each operation's
/// revision check happens inside the transaction, so it is atomic with its write.
public final class RecordWriter: @unchecked Sendable {
    let db: SQLiteDatabase
    var seq: Int64
    /// The statements of every record write, prepared once.
    let statements: RecordStatements
    /// The log's author rows by who they are, as committed.
    private var authorIDs: [ChangeAuthor: Int64] = [:]
    private var lastAuthor: (author: ChangeAuthor, id: Int64)?
    /// Field edits committed to the log whose rows are written behind (`RecordWriter+Apply`).
    let pending: PendingRecords
    /// What the transaction in progress did to the waiting edits: published when it commits.
    var staged: [PendingRecords.Key: PendingRecords.Staged] = [:]
    /// Every change up to this seq is in its row (`meta.applied_seq`).
    var appliedSeq: Int64
    /// The waiting edits being written to their rows, a chunk at a time.
    var drain: Drain?

    public init(folder: DataFolder) throws(StoreError) {
        db = try folder.open()
        statements = try RecordStatements(db)
        seq = try db.queryFirst(RecordReader.currentSeqQuery) { $0.integer(0) } ?? 0
        appliedSeq = seq
        pending = PendingRecords(seq: seq)
        try catchUpRows()
    }

    /// Applies `operations` in order and makes them durable; one outcome per operation. When
    /// this throws, nothing of the batch was committed.
    public func commit(_ operations: [StoreOperation], now: Date = Date()) throws(StoreError) -> [StoreOutcome] {
        let startSeq = seq
        let timestamp = Int64(now.timeIntervalSince1970)
        staged.removeAll(keepingCapacity: true)
        let outcomes: [StoreOutcome]
        do {
            outcomes = try db.transaction(immediate: true) { () throws(StoreError) in
                var outcomes: [StoreOutcome] = []
                outcomes.reserveCapacity(operations.count)
                for operation in operations {
                    outcomes.append(try apply(operation, timestamp: timestamp))
                }
                return outcomes
            }
        } catch {
            seq = startSeq
            // Rows made in the rolled-back transaction are gone, and so are its waiting edits.
            authorIDs = [:]
            lastAuthor = nil
            staged.removeAll()
            throw error
        }
        pending.publish(staged, seq: seq)
        staged.removeAll(keepingCapacity: true)
        return outcomes
    }

    private func apply(_ operation: StoreOperation, timestamp: Int64) throws(StoreError) -> StoreOutcome {
        switch operation {
        case .put(let collection, let id, let baseRev, let fieldsJSON, let author):
            return try put(collection, id, baseRev, fieldsJSON, Stamp(author: try authorID(author), at: timestamp))
        case .move(let collection, let id, let baseRev, let placement, let author):
            return try move(collection, id, baseRev, placement, Stamp(author: try authorID(author), at: timestamp))
        case .delete(let collection, let id, let baseRev, let author):
            let current = try stored(collection, id)
            guard let rev = RevisionRules.delete(baseRev: baseRev, replacing: current?.head) else {
                return .conflict(collection: collection, id: id, current: try state(collection, id))
            }
            return try write(collection, RecordState(id: id, rev: rev, body: .deleted), Stamp(author: try authorID(author), at: timestamp), over: current)
        case .restore(let collection, let id, let baseRev, let target, let author):
            let current = try stored(collection, id)
            guard let rev = RevisionRules.restore(baseRev: baseRev, replacing: current?.head) else {
                return .conflict(collection: collection, id: id, current: try state(collection, id))
            }
            let body = target?.body ?? .deleted
            return try write(collection, RecordState(id: id, rev: rev, body: body), Stamp(author: try authorID(author), at: timestamp), over: current)
        case .createCollection(let name, let owner):
            let exists = try db.queryFirst("SELECT 1 FROM collections WHERE name = ?", .text(name)) { _ in true } ?? false
            if exists { return .refused(ProtocolError(.exists, "collection \(name) exists")) }
            try db.execute("INSERT INTO collections (name, owner, created_at) VALUES (?, ?, ?)", .text(name), .text(owner), .integer(timestamp))
            try db.execute("INSERT INTO members (collection, user, role) VALUES (?, ?, ?)", .text(name), .text(owner), .integer(Int64(Role.admin.rawValue)))
            return .done
        case .dropCollection(let name):
            try writeWaitingRows()
            let removed = try db.execute("DELETE FROM collections WHERE name = ?", .text(name))
            guard removed > 0 else { return .refused(ProtocolError(.notFound, "no collection \(name)")) }
            try db.execute("DELETE FROM members WHERE collection = ?", .text(name))
            try db.execute("DELETE FROM invitations WHERE collection = ?", .text(name))
            try db.execute("DELETE FROM records WHERE collection IN (?, ?)", .text(name), .text(Names.conflictsCollection(of: name)))
            try db.execute("DELETE FROM record_versions WHERE collection IN (?, ?)", .text(name), .text(Names.conflictsCollection(of: name)))
            try db.execute("DELETE FROM changes WHERE collection IN (?, ?)", .text(name), .text(Names.conflictsCollection(of: name)))
            try keepSeq()
            return .done
        case .renameCollection(let from, let to):
            try writeWaitingRows()
            let taken = try db.queryFirst("SELECT 1 FROM collections WHERE name = ?", .text(to)) { _ in true } ?? false
            if taken { return .refused(ProtocolError(.exists, "collection \(to) exists")) }
            let copied = try db.execute(
                "INSERT INTO collections (name, owner, created_at) SELECT ?, owner, created_at FROM collections WHERE name = ?", .text(to), .text(from))
            guard copied > 0 else { return .refused(ProtocolError(.notFound, "no collection \(from)")) }
            try db.execute("UPDATE members SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE invitations SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE records SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE records SET collection = ? WHERE collection = ?",
                           .text(Names.conflictsCollection(of: to)), .text(Names.conflictsCollection(of: from)))
            try db.execute("UPDATE record_versions SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE changes SET collection = ? WHERE collection = ?", .text(to), .text(from))
            try db.execute("UPDATE changes SET collection = ? WHERE collection = ?",
                           .text(Names.conflictsCollection(of: to)), .text(Names.conflictsCollection(of: from)))
            try db.execute("DELETE FROM collections WHERE name = ?", .text(from))
            return .done
        case .grant(let collection, let user, let role):
            let known = try db.queryFirst("SELECT 1 FROM users WHERE name = ?", .text(user)) { _ in true } ?? false
            guard known else { return .refused(ProtocolError(.notFound, "no user \(user)")) }
            if let role {
                try db.execute(
                    "INSERT INTO members (collection, user, role) VALUES (?, ?, ?) ON CONFLICT (collection, user) DO UPDATE SET role = excluded.role",
                    .text(collection), .text(user), .integer(Int64(role.rawValue)))
            } else {
                try db.execute("DELETE FROM members WHERE collection = ? AND user = ?", .text(collection), .text(user))
            }
            return .done
        case .createToken(let hash, let user, let label, let endsWithBrowser):
            try db.execute("INSERT INTO tokens (hash, user, label, created_at, browser_session) VALUES (?, ?, ?, ?, ?)",
                           .text(hash), .text(user), label.map(SQLValue.text) ?? .null, .integer(timestamp), .integer(endsWithBrowser ? 1 : 0))
            return .done
        case .createInvitation(let invitation):
            try db.execute(
                """
                INSERT INTO invitations (hash, collection, role, made_by, note, created_at, expires_at, uses_allowed, uses)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
                """, .text(invitation.hash), .text(invitation.collection), .integer(Int64(invitation.role.rawValue)), .text(invitation.madeBy),
                invitation.note.map(SQLValue.text) ?? .null, .integer(invitation.createdAt), .integer(invitation.expiresAt),
                .integer(Int64(invitation.usesAllowed)))
            return .done
        case .revokeInvitation(let collection, let id):
            let hashes = try db.query(
                "SELECT hash FROM invitations WHERE collection = ? AND substr(hash, 1, ?) = ?", .text(collection), .integer(Int64(id.utf8.count)), .text(id)
            ) { $0.text(0) ?? "" }
            guard hashes.count == 1, let hash = hashes.first else {
                return .refused(ProtocolError(hashes.isEmpty ? .notFound : .badRequest,
                                              hashes.isEmpty ? "no invitation \(id) to \(collection)" : "more than one invitation has id \(id)"))
            }
            try db.execute("DELETE FROM invitations WHERE hash = ?", .text(hash))
            try db.execute("DELETE FROM tokens WHERE invitation = ?", .text(hash))
            return try accountsChanged()
        case .redeemInvitation(let hash, let user, let newPasswordHash, let token, let at):
            let found = try db.queryFirst("SELECT collection, role, expires_at, uses_allowed, uses FROM invitations WHERE hash = ?", .text(hash)) { row in
                (collection: row.text(0) ?? "", role: row.integer(1), expiresAt: row.integer(2), allowed: row.integer(3), uses: row.integer(4))
            }
            guard let found else { return .refused(ProtocolError(.authFailed, "no such invitation")) }
            if let closed = Invitation.closedReason(expiresAt: found.expiresAt, uses: found.uses, usesAllowed: found.allowed, at: at) { return .refused(closed) }
            let collectionExists = try db.queryFirst("SELECT 1 FROM collections WHERE name = ?", .text(found.collection)) { _ in true } ?? false
            guard collectionExists else { return .refused(ProtocolError(.notFound, "no collection \(found.collection)")) }
            if let newPasswordHash {
                let added = try db.execute(
                    "INSERT OR IGNORE INTO users (name, password_hash, is_admin, created_at) VALUES (?, ?, 0, ?)",
                    .text(user), .text(newPasswordHash), .integer(timestamp))
                guard added == 1 else { return .refused(ProtocolError(.exists, "user \(user) exists; log in to it instead")) }
            } else {
                let known = try db.queryFirst("SELECT 1 FROM users WHERE name = ?", .text(user)) { _ in true } ?? false
                guard known else { return .refused(ProtocolError(.notFound, "no user \(user)")) }
            }
            try db.execute(
                "INSERT INTO members (collection, user, role) VALUES (?, ?, ?) ON CONFLICT (collection, user) DO UPDATE SET role = max(role, excluded.role)",
                .text(found.collection), .text(user), .integer(found.role))
            try db.execute("UPDATE invitations SET uses = uses + 1 WHERE hash = ?", .text(hash))
            try db.execute("INSERT INTO tokens (hash, user, label, created_at, browser_session, invitation) VALUES (?, ?, ?, ?, ?, ?)",
                           .text(token.hash), .text(user), .text(token.label), .integer(timestamp), .integer(token.endsWithBrowser ? 1 : 0), .text(hash))
            return try accountsChanged()
        case .revokeToken(let hash, let user):
            let removed = if let user {
                try db.execute("DELETE FROM tokens WHERE hash = ? AND user = ?", .text(hash), .text(user))
            } else {
                try db.execute("DELETE FROM tokens WHERE hash = ?", .text(hash))
            }
            return removed > 0 ? .done : .refused(ProtocolError(.notFound, "no such token"))
        case .touchToken(let hash, let time):
            try db.execute("UPDATE tokens SET last_used_at = ? WHERE hash = ?", .integer(time), .text(hash))
            return .done
        case .addUser(let name, let passwordHash, let isAdmin):
            let added = try db.execute(
                "INSERT OR IGNORE INTO users (name, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?)",
                .text(name), .text(passwordHash), .integer(isAdmin ? 1 : 0), .integer(timestamp))
            guard added == 1 else { return .refused(ProtocolError(.exists, "user \(name) exists")) }
            return try accountsChanged()
        case .setPassword(let name, let passwordHash, let kept):
            guard try db.execute("UPDATE users SET password_hash = ? WHERE name = ?", .text(passwordHash), .text(name)) == 1 else {
                return .refused(ProtocolError(.notFound, "no user \(name)"))
            }
            try db.execute("DELETE FROM tokens WHERE user = ? AND hash IS NOT ?", .text(name), kept.map(SQLValue.text) ?? .null)
            return try accountsChanged()
        case .removeUser(let name):
            guard try db.execute("DELETE FROM users WHERE name = ?", .text(name)) == 1 else {
                return .refused(ProtocolError(.notFound, "no user \(name)"))
            }
            try db.execute("DELETE FROM members WHERE user = ?", .text(name))
            try db.execute("DELETE FROM tokens WHERE user = ?", .text(name))
            return try accountsChanged()
        case .setServerAdmin(let name, let isAdmin):
            guard try db.execute("UPDATE users SET is_admin = ? WHERE name = ?", .integer(isAdmin ? 1 : 0), .text(name)) == 1 else {
                return .refused(ProtocolError(.notFound, "no user \(name)"))
            }
            return try accountsChanged()
        case .purgeTombstones(let cutoff, let history):
            try writeWaitingRows()
            try purge(tombstonesUpdatedBefore: cutoff, history: history)
            return .done
        }
    }

    /// The last seq handed out is the log's last change (`RecordReader.currentSeqQuery`), so a
    /// commit writes no counter; an operation that may delete that change writes it to meta.
    func keepSeq() throws(StoreError) {
        try statements.saveSeq.bind(1, seq)
        try statements.saveSeq.run()
    }

    /// The log's row for `author`, made the first time it writes (with its token's label).
    private func authorID(_ author: ChangeAuthor) throws(StoreError) -> Int64 {
        // A batch's writes mostly come from few connections in runs: no hashing for a repeat.
        if let last = lastAuthor, last.author == author { return last.id }
        if let id = authorIDs[author] {
            lastAuthor = (author, id)
            return id
        }
        let id = try db.queryFirst(
            """
            INSERT INTO authors (user, device, via, label) VALUES (?, ?, ?, (SELECT label FROM tokens WHERE hash = ?))
            ON CONFLICT (user, device, via) DO UPDATE SET label = coalesce(excluded.label, label) RETURNING id
            """, .text(author.user), .text(author.device), .text(author.via.rawValue), author.tokenHash.map(SQLValue.text) ?? .null) { $0.integer(0) } ?? 0
        authorIDs[author] = id
        lastAuthor = (author, id)
        return id
    }

    /// Raises the accounts epoch in the batch's transaction, as the `user` commands do.
    private func accountsChanged() throws(StoreError) -> StoreOutcome {
        try db.execute(
            "INSERT INTO meta (key, value) VALUES ('accounts_epoch', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1")
        return .done
    }

    private func put(_ collection: String, _ id: String, _ baseRev: Int64, _ fieldsJSON: String, _ stamp: Stamp) throws(StoreError) -> StoreOutcome {
        let current = try stored(collection, id)
        switch RevisionRules.put(baseRev: baseRev, replacing: current?.head) {
        case .update(let rev, let position):
            return try write(collection, RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), stamp, over: current)
        case .create(let rev):
            let position = try positionAtEnd(collection, excluding: id)
            return try write(collection, RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), stamp, over: current)
        case .conflict:
            return .conflict(collection: collection, id: id, current: try state(collection, id))
        }
    }

    private func move(_ collection: String, _ id: String, _ baseRev: Int64, _ placement: Placement, _ stamp: Stamp) throws(StoreError) -> StoreOutcome {
        let current = try state(collection, id)
        switch try placement.plan(moving: id, of: collection, baseRev: baseRev, over: current, in: Neighbours(writer: self, collection: collection, moving: id)) {
        case .conflict:
            return .conflict(collection: collection, id: id, current: current)
        case .refused(let error):
            return .refused(error)
        case .rebalance(let fieldsJSON, let lower, let upper):
            let neighbours = Neighbours(writer: self, collection: collection, moving: id)
            let states = try LocalRekey.states(moving: id, baseRev: baseRev, fieldsJSON: fieldsJSON, between: lower, upper, in: neighbours)
            // Same fields, new key: each state replaces one of the same size.
            return try .rebalanced(writing: states) { state throws(StoreError) in try record(collection, state, stamp, previousBytes: state.storedFieldBytes) }
        case .place(let state):
            return try record(collection, state, stamp, previousBytes: current?.storedFieldBytes ?? 0)
        }
    }

    private func positionAtEnd(_ collection: String, excluding id: String) throws(StoreError) -> String {
        let last = try db.queryFirst(
            "SELECT position FROM records WHERE collection = ? AND position IS NOT NULL AND id != ? ORDER BY position DESC, id DESC LIMIT 1",
            .text(collection), .text(id)) { $0.text(0) } ?? nil
        return try key(between: last, nil)
    }

    private func key(between lower: String?, _ upper: String?) throws(StoreError) -> String {
        do {
            return try PositionKey.between(lower, upper)
        } catch {
            throw .sqlite(code: 0, message: "position keys exhausted between \(lower ?? "start") and \(upper ?? "end")")
        }
    }

    /// What a PUT or DEL needs of the record it replaces, in one read that makes no value of
    /// its fields.
    private func stored(_ collection: String, _ id: String) throws(StoreError) -> StoredRecord? {
        if let edit = waitingEdit(collection, id) {
            return StoredRecord(head: RecordHead(rev: edit.rev, position: edit.position), fieldBytes: edit.fieldsJSON.utf8.count, seq: edit.seq)
        }
        try statements.head.bind(1, collection)
        try statements.head.bind(2, id)
        return try statements.head.first { row in
            let live = !row.isNull(2)
            return StoredRecord(head: RecordHead(rev: row.integer(0), position: live ? row.text(1) ?? "" : nil), fieldBytes: row.byteCount(2),
                                seq: row.integer(3))
        }
    }

    /// The record as committed so far: its waiting edit, else its row.
    func state(_ collection: String, _ id: String) throws(StoreError) -> RecordState? {
        if let edit = waitingEdit(collection, id) { return edit.state(id: id) }
        return try RecordReader.state(in: db, collection, id)
    }

    /// Writes `state` (the next seq) over the record `previous` read.
    private func write(_ collection: String, _ state: RecordState, _ stamp: Stamp, over previous: StoredRecord?) throws(StoreError) -> StoreOutcome {
        guard let previous else { return try record(collection, state, stamp, previousBytes: 0, previous: .known(nil)) }
        // Fields only (the record keeps its place): the order index is not touched, and the
        // row is written behind the log.
        let keepsPlace = state.position != nil && state.position == previous.head.position
        return try record(collection, state, stamp, previousBytes: previous.fieldBytes, keepsPlace: keepsPlace, rowBehind: keepsPlace,
                          previous: .known(previous.seq))
    }

    /// Appends `state` (the next seq) to the log, then writes it in place of a record whose
    /// fields took `previousBytes`: its fields alone when it `keepsPlace`, else the whole row;
    /// or, `rowBehind`, leaves the row to be written behind (a waiting edit).
    /// `previous` is the record's change before, when the caller read it with the record.
    private func record(
        _ collection: String, _ state: RecordState, _ stamp: Stamp, previousBytes: Int, keepsPlace: Bool = false, rowBehind: Bool = false,
        previous: PreviousChange = .lookUp
    ) throws(StoreError) -> StoreOutcome {
        seq += 1
        let waiting = waitingEdit(collection, state.id)
        let append: PreparedStatement
        switch previous {
        case .known(let seq):
            append = statements.append
            if let seq { try append.bind(9, seq) } else { try append.bind(9, nil) }
        case .lookUp:
            if let waiting {
                append = statements.append
                try append.bind(9, waiting.seq)
            } else {
                // Run before the record's row changes: it reads the seq that row has now.
                append = statements.appendLookingUp
            }
        }
        try bindState(append, collection, state, stamp.at)
        try append.bind(7, state.position)
        try append.bind(8, stamp.author)
        try run(append, fields: Self.loggedFields(state.fieldsJSON, keepsPlace: keepsPlace))
        let key = PendingRecords.Key(collection: collection, id: state.id)
        if rowBehind, case .live(let position, let fieldsJSON) = state.body {
            staged[key] = .waiting(PendingRecords.Entry(rev: state.rev, seq: seq, position: position, fieldsJSON: fieldsJSON, at: stamp.at))
            return .changed(Change(collection: collection, seq: seq, state: state, storedBytesDelta: state.storedFieldBytes - previousBytes))
        }
        if waiting != nil { staged[key] = .retired }
        let write = keepsPlace ? statements.updateFields : statements.upsert
        try bindState(write, collection, state, stamp.at)
        if !keepsPlace { try write.bind(7, state.position) }
        try run(write, fields: state.fieldsJSON)
        return .changed(Change(collection: collection, seq: seq, state: state, storedBytesDelta: state.storedFieldBytes - previousBytes))
    }

    /// The fields the log records for a write: the fields written (the simulation's mutation
    /// check can break that, to see the seeded runs notice).
    private static func loggedFields(_ fields: String?, keepsPlace: Bool) -> String? {
        #if SIMULATION_MUTATIONS
        if Mutation.active == .fieldEditsNotLogged, keepsPlace { return "{}" }
        #endif
        return fields
    }

    /// The parameters the log's append and the record's write share (by the same numbers).
    private func bindState(_ statement: PreparedStatement, _ collection: String, _ state: RecordState, _ at: Int64) throws(StoreError) {
        try statement.bind(1, collection)
        try statement.bind(2, state.id)
        try statement.bind(3, state.rev)
        try statement.bind(4, seq)
        try statement.bind(6, at)
    }

    /// Runs `statement` with the fields bound in place as parameter 5 (NULL for a tombstone).
    private func run(_ statement: PreparedStatement, fields: String?) throws(StoreError) {
        if let fields {
            try statement.run(bindingInPlace: fields, at: 5)
        } else {
            try statement.bind(5, nil)
            try statement.run()
        }
    }
}

/// The record's change before the one being written: read with the record, or looked up by the
/// append itself.
private enum PreviousChange {
    case known(Int64?)
    case lookUp
}

/// What a PUT or DEL read of the record it replaces: the revision check's part and the bytes
/// its fields take.
private struct StoredRecord {
    var head: RecordHead
    var fieldBytes: Int
    /// Its latest change's seq: the log's change before the one written over it.
    var seq: Int64
}

/// Who made the changes being written (their row in `authors`) and when.
private struct Stamp {
    var author: Int64
    var at: Int64
}
