import AgentDecisions
import EventLoop
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// Many files of one collection deleted at once are held until a person confirms or undoes
/// them (`plistsync deletes`).
extension SyncEngine {
    // MARK: - Mass deletes

    static let heldDeletesCheckMilliseconds: UInt64 = 500

    /// Whether pushing `count` more deletes would pass `confirmDeletesOver` within the window.
    func isMassDelete(_ collection: String, adding count: Int) -> Bool {
        massDeletes.isMassDelete(collection, adding: count, now: clock.now.timeIntervalSinceReferenceDate,
                                 limit: configuration.confirmDeletesOver, window: configuration.massDeleteWindowSeconds)
    }

    /// Holds deletes until a person confirms or undoes them with `plistsync deletes`, which
    /// leaves a request file in `DIR/.plistsync/deletes/` that is looked for every 500 ms.
    func hold(_ collection: String, _ ids: [RecordID]) {
        let (first, count) = massDeletes.hold(collection, ids)
        status.report("\(count) files deleted at once are held, not deleted on the server: `plistsync deletes \(collection) --confirm --dir DIR` deletes them, `--undo` brings the files back",
                      for: "\(collection)/")
        status.changed()
        if first { log("\(collection): \(count) files deleted at once; holding the deletes until confirmed (plistsync deletes \(collection) --confirm|--undo)") }
        if first { clock.after(Self.heldDeletesCheckMilliseconds) { [self] in checkHeldDeletes(collection) } }
    }

    func checkHeldDeletes(_ collection: String) {
        guard let held = massDeletes.held(collection) else { return }
        let request = MassDeleteRequest.read(stateFolder: mirror.stateFolder, collection: collection, in: mirror.fileSystem)
        let stillMissing = held.filter { mirror.kind(at: mirror.recordPath(collection, $0)) == .missing }
        let outcome = DeleteHold.look(held: held, stillMissing: stillMissing,
                                      request: request.map { $0 == .confirm ? .confirm : .undo }, subscribed: subscriptions.isSubscribed(collection))
        if case .keepHolding(let ids) = outcome {
            massDeletes.keepHolding(collection, ids)
            clock.after(Self.heldDeletesCheckMilliseconds) { [self] in checkHeldDeletes(collection) }
            return
        }
        MassDeleteRequest.clear(stateFolder: mirror.stateFolder, collection: collection, in: mirror.fileSystem)
        massDeletes.release(collection)
        status.clearProblem(for: "\(collection)/")
        switch outcome {
        case .confirm(let ids):
            log("\(collection): deleting \(ids.count) held files on the server, as confirmed")
            pushDeletes(collection, stillDeleted(collection, Set(ids)))
        case .undo(let ids):
            log("\(collection): bringing back \(ids.count) held deleted files")
            for id in ids { restoreDeletedFile(collection, id) }
        case .release, .keepHolding:
            break
        }
        status.changed()
        batchEnded()
    }

    /// Writes a record's file again from its last synced state; false when it cannot be written.
    @discardableResult
    func restoreDeletedFile(_ collection: String, _ id: RecordID) -> Bool {
        guard let entry = state.entry(collection, id), let json = entry.fieldsJSON,
            let fields = try? ValueJSON.decodeFields(Array(json.utf8))
        else { return true }
        do {
            var restored = entry
            let path = mirror.recordPath(collection, id)
            restored.fileHash = try writeRecord(fields, entry.format, path, guard: .init(expectedHash: nil))
            saveState { try state.set(restored, collection, id) }
            return true
        } catch {
            log("cannot bring back \(collection)/\(id): \(error)")
            return false
        }
    }
}
