import AgentDecisions
import EventLoop
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The order file: rewritten from the synced positions, and a person's reordering read as
/// MOVEs of the rows they moved.
extension SyncEngine {
    // MARK: - Order

    func currentOrder(_ collection: String) -> [RecordID] {
        // A record whose file a twin's takes the place of (`SyncedRecord.nameClash`) is not listed.
        (state.records[collection] ?? [:]).filter { $0.value.isLive && $0.value.position != nil && $0.value.fileHash != SyncedRecord.nameClash }
            .sorted { ($0.value.position!, $0.key) < ($1.value.position!, $1.key) }.map(\.key)
    }

    /// Rewrites the order file from the synced positions, unless the user edited it since the
    /// agent last wrote or read it (that edit is read first, never overwritten) or moves are
    /// still in flight (the positions would show the old order for a moment).
    func writeOrderFile(_ collection: String) {
        // Offline, an edit could not be turned into MOVEs: it waits for the next subscription.
        guard Names.collection(ofConflicts: collection) == nil, subscriptions.isSubscribed(collection) else { return }
        // A file that does not parse is left for the person fixing it.
        guard readOrderEdits(collection) != .unreadable else { return }
        guard !order.hasMovesInFlight(collection) else { return }
        let ids = currentOrder(collection)
        let bytes = PlistFile.encode(ids.plistArray, as: .xml)
        let hash = ContentHash.of(bytes)
        guard order.base(collection)?.hash != hash else { return }
        let path = mirror.orderPath(collection)
        // The file as last written or read here: anything else on disk is an unread edit.
        let expected = order.base(collection)?.hash
        if mirror.read(path).map(ContentHash.of) != hash {
            do {
                try mirror.writeAtomically(bytes, to: path, guard: .init(expectedHash: expected))
                tell(.orderFileWritten(collection))
            } catch MirrorError.superseded {
                // Saved by someone just now: read that edit; the file is written after its moves.
                if readOrderEdits(collection) == .rewrite { order.markDirty(collection) }
                return
            } catch {
                log("cannot write the order of \(collection): \(error)")
                return retryOrderFile(collection)
            }
        }
        order.setBase(collection, OrderBase(hash: hash, ids: ids))
        saveState { try state.setOrderHash(hash, collection) }
    }

    /// Writes the order file again later (a full disk): like a change that could not be applied,
    /// it is retried every `ApplyRetries.retryMilliseconds` until it is written.
    func retryOrderFile(_ collection: String) {
        guard order.claimRetry(collection) else { return }
        clock.after(ApplyRetries.retryMilliseconds) { [self] in
            order.retryDue(collection)
            batchEnded()
        }
    }

    /// What the order file holds: missing, not an array of ids, or the ids.
    enum OrderFileContent {
        case missing
        case unreadable
        case ids(hash: String, [RecordID])
    }

    func readOrderFile(_ collection: String) -> OrderFileContent {
        guard let bytes = mirror.read(mirror.orderPath(collection)) else { return .missing }
        guard case .array(let items)? = try? PlistFile.decode(bytes).0 else { return .unreadable }
        return .ids(hash: ContentHash.of(bytes), [RecordID](plistArray: items))
    }

    /// The order file changed on disk (or may have, e.g. while the agent was stopped): turn the
    /// user's reordering into MOVEs.
    func orderFileChanged(_ collection: String) {
        guard subscriptions.isSubscribed(collection) else { return }
        readOrderEdits(collection)
    }

    /// Reads the order file when it differs from what the agent last wrote or read, and moves
    /// the rows the user moved. Only those: a row someone else moved meanwhile stays where they
    /// put it, so two people reordering different rows at once both keep their moves.
    /// A file that does not parse is reported and left alone until it changes.
    @discardableResult
    func readOrderEdits(_ collection: String) -> OrderFileReading {
        guard let base = order.base(collection), subscriptions.isSubscribed(collection) else { return .unchanged }
        let problemKey = "\(collection).order.plist"
        let hash: String
        let desired: [RecordID]
        switch readOrderFile(collection) {
        case .missing:
            order.forgetBaseHash(collection)
            saveState { try state.setOrderHash(nil, collection) }
            return base.hash != nil ? .rewrite : .unchanged
        case .unreadable:
            if status.unparseable[problemKey] == nil { log("not reading \(problemKey): not an array of record ids") }
            status.reportUnparseable("not an array of record ids; the order is not changed until the file is fixed", for: problemKey)
            return .unreadable
        case .ids(let found, let ids):
            (hash, desired) = (found, ids)
        }
        status.clearUnparseable(for: problemKey)
        guard hash != base.hash else { return .unchanged }
        // Rows the server has not placed yet (a create not answered, or answered but its change,
        // which carries the position, not back yet) cannot be moved: the edit is read once
        // they are placed (each placement marks the order for a rewrite, which reads it), or
        // once a write of the collection is answered or retried (a row whose create waited for
        // a retry may be gone from the file by then, and never placed: seed 4413).
        guard !desired.contains(where: { isAwaitingPlacement(collection, $0) }) else {
            order.editWaits(collection)
            return .unchanged
        }
        let current = currentOrder(collection)
        // Nothing to move when the file lists the rows as they stand (an order file written at
        // start, before this mirror knew the positions, is not an edit).
        let nothingToMove = desired == base.ids || desired.filter(Set(current).contains) == current
        let moves = nothingToMove ? [] : OrderPlanner.moves(from: base.ids, to: desired, current: current)
        // A row whose own write is unanswered cannot be moved yet (its MOVE would carry a stale
        // revision): the edit is read again once that write is answered (simulation seed 7067:
        // it was skipped, and the drag lost).
        if moves.contains(where: { pushes.isInFlight(RecordKey(collection: collection, id: $0.id)) }) {
            order.editWaits(collection)
            return .unchanged
        }
        order.editRead(collection)
        order.setBase(collection, OrderBase(hash: hash, ids: desired))
        saveState { try state.setOrderHash(hash, collection) }
        guard !nothingToMove else { return .rewrite }
        for (id, placement) in moves {
            guard let entry = state.entry(collection, id) else { continue }
            sendMove(collection, id, baseRev: entry.rev, placement: placement)
        }
        order.markDirty(collection)
        return .rewrite
    }

    /// How many times a drag is sent again after its row changed on the server meanwhile.
    static let moveRetries = 3

    /// Sends one MOVE of a drag. A row edited elsewhere meanwhile (CONFLICT naming a newer
    /// live rev) is moved again from that rev: the drag places the row beside its neighbours,
    /// whatever its fields became (simulation seed 322: the drag was lost).
    private func sendMove(_ collection: String, _ id: RecordID, baseRev: Int64, placement: Placement, retries: Int = moveRetries) {
        order.moveSent(collection)
        link.send(.move(collection: collection, id: id.string, baseRev: baseRev, placement: placement)) { [self] event in
            if case .ok(_, .written(_, _, _, let rev, _), _) = event, var moved = state.entry(collection, id) {
                moved.rev = rev
                saveState { try state.set(moved, collection, id) }
            } else if case .error(_, let code, let message, let conflict) = event {
                log("cannot move \(collection)/\(id): \(code) \(message)")
                // Only from a state this mirror took in (a change it could not write, on a full
                // disk, must not be skipped by a move's new rev: simulation seed 1472).
                if let conflict, applyRemote(collection, id, conflict, fromConflict: true), code == .conflict, conflict.isLive, conflict.rev > baseRev,
                   state.entry(collection, id)?.rev == conflict.rev, retries > 0
                {
                    sendMove(collection, id, baseRev: conflict.rev, placement: placement, retries: retries - 1)
                }
            }
            order.moveAnswered(collection)
            batchEnded()
        }
    }

    /// Whether a row of the mirror is not in the synced order yet though it will be: its file
    /// is there and its create (or its making again after a delete) is unanswered, or it is
    /// live here without a position.
    func isAwaitingPlacement(_ collection: String, _ id: RecordID) -> Bool {
        // A file at its path that is a twin's (a folding file system) is not a create to wait for.
        // A record deleted on the server whose file is here again is being made again, as a new
        // one is (simulation seed 8826: a drag of it was read before its create was placed).
        guard let entry = state.entry(collection, id), entry.isLive else {
            return mirror.read(mirror.recordPath(collection, id)) != nil && mirror.clashingName(collection, id) == nil
        }
        return entry.position == nil
    }

    /// What reading the order file found.
    enum OrderFileReading {
        /// Nothing new (or an edit that waits for its rows' creates).
        case unchanged
        /// An edit was read (or the file was deleted): write it afresh once its moves are in.
        case rewrite
        /// The file does not parse: leave it for the person fixing it.
        case unreadable
    }
}
