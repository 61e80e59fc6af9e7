import AgentDecisions
import Foundation
import PlistFormat
import SyncProtocol

/// Reading a save of an app file into its shadow: only what the app changed since it loaded the
/// file goes in; what changed elsewhere meanwhile (fields, deletes, moves) is not undone.
extension FileMirror {
    /// Reads every attached file (at start).
    func readAll() {
        for file in files { read(file) }
    }

    /// The app saved its file: split it into the shadow.
    func read(_ file: AttachedFile) {
        let collection = file.collection
        guard let bytes = mirror.read(path(file)) else {
            // A file the app removed is written again from the collection, never read as
            // "delete every record".
            if knownHash[collection] != nil { knownHash[collection] = nil }
            return rebuild(file)
        }
        let hash = ContentHash.of(bytes)
        guard hash != knownHash[collection] else { return }
        let entries: [CollectionFile.Entry]
        do {
            let (read, kind) = try CollectionFile.entries(bytes, idKey: file.idKey, newID: { UUID().uuidString })
            entries = read
            kinds[collection] = kind
        } catch {
            if status.unparseable[file.name] == nil { log("not reading \(file.name): \(error)") }
            status.unparseable[file.name] = "\(error)"
            return status.changed()
        }
        status.unparseable[file.name] = nil
        // Shadow writes by the engine since the last rebuild still need one; this read's own don't.
        let shadow = shadowRecords(collection)
        // When the save missed something (a change it never saw, a row added elsewhere), the
        // file is rebuilt to show it; otherwise the shadow now matches the file.
        var missed = false
        // A shadow file that cannot be written (a full disk): the save is not taken as read,
        // and is read again later; remembered as read, its edits would count as seen and a
        // later stale save would drop them.
        var unwritten = false
        defer {
            _ = refreshCache()
            // Changes from elsewhere written to the shadow before this save was read (one that
            // arrived while the app saved) are not in the file: it is rebuilt to show them, as it
            // is when the save missed something.
            if missed || dirty.contains(collection), !unwritten { shadowsChanged(collection) }
        }
        let versions = history[collection] ?? []
        let latest = versions.last?.records
        let latestOrder = knownOrder[collection] ?? []
        defer {
            if unwritten { readAgainLater(file) } else { remember(collection, entries, bytes, byApp: true) }
        }
        /// Whether `value(version)` going back to `wanted` undoes a change the app never saw:
        /// the newest value appeared in a version the agent wrote (not one the app saved), and
        /// `wanted` is a value the file held before it, since the app's own last save (the app
        /// saved a load made before the change). Going back from a value the app itself saved
        /// (a cancelled edit) is an edit.
        func undoesUnseen<T: Equatable>(_ value: (Version) -> T, _ wanted: T) -> Bool {
            guard var index = versions.indices.last else { return false }
            let newest = value(versions[index])
            while index > 0, value(versions[index - 1]) == newest { index -= 1 }
            guard !versions[index].byApp else { return false }
            let since = versions[..<index].lastIndex(where: \.byApp) ?? 0
            return versions[since..<index].contains { value($0) == wanted }
        }
        func stale(_ id: String, _ key: String, _ wanted: Value?) -> Bool {
            undoesUnseen({ $0.records[id]?[key] }, wanted)
        }
        for entry in entries {
            // Unchanged since the file was last seen: nothing to read or send.
            if latest?[entry.id] == entry.fields { continue }
            let recordPath = mirror.recordPath(collection, entry.id)
            let current = shadow[entry.id]
            var fields = entry.fields
            if let latest, latest[entry.id] == nil, undoesUnseen({ $0.records[entry.id] != nil }, true) {
                // Deleted elsewhere after the app loaded the file: a row the app left as it
                // loaded it is not brought back; one it edited is (an edit beats a delete).
                let loaded = versions.last { $0.records[entry.id] != nil }?.records[entry.id]
                if loaded == nil || loaded == entry.fields {
                    missed = true
                    continue
                }
            }
            if let before = latest?[entry.id], var updated = current {
                // Only what the app changed since it saw the file goes on top of the shadow.
                let changed = Set(before.keys).union(entry.fields.keys).filter { before[$0] != entry.fields[$0] }
                let keys = changed.filter { !stale(entry.id, $0, entry.fields[$0]) }
                if keys.count < changed.count { missed = true }
                guard !keys.isEmpty else { continue }
                for key in keys { updated[key] = entry.fields[key] }
                fields = updated
                // A field the app changes that changed elsewhere since the app's own last save:
                // the app may have saved over a value it never saw. The value it replaces is
                // kept (`plistsync versions`), as a file a remote change replaces is.
                let lastSave = versions.last(where: \.byApp)?.records[entry.id]
                if keys.contains(where: { lastSave?[$0] != before[$0] }) { mirror.keepVersion(collection, entry.id) }
            }
            guard fields != current else { continue }
            do {
                try mirror.writeAtomically(PlistFile.encode(.dictionary(fields), as: .binary), to: recordPath)
            } catch {
                log("cannot write \(recordPath): \(error)")
                unwritten = true
                continue
            }
            onRecord(collection, entry.id)
        }
        // Deleted by the app: rows the file had and the save no longer lists, unless the row
        // came in a version the agent wrote after the app loaded the file (it never saw it).
        let listed = Set(entries.map(\.id))
        for id in shadow.keys where !listed.contains(id) {
            guard latest?[id] != nil, !undoesUnseen({ $0.records[id] != nil }, false) else {
                missed = true
                continue
            }
            mirror.remove(mirror.recordPath(collection, id))
            onRecord(collection, id)
        }
        // Reordered by the app: only when its order of the rows it saw differs from the newest,
        // and does not just go back to the order before a version the agent wrote (a save from
        // a load made before a move elsewhere keeps that move, as it keeps other fields).
        let common = Set(latestOrder).intersection(listed)
        let savedOrder = entries.map(\.id).filter(common.contains)
        guard versions.isEmpty || latestOrder.filter(common.contains) != savedOrder || entries.contains(where: { !common.contains($0.id) })
        else { return }
        var ids = entries.map(\.id)
        if !versions.isEmpty, latestOrder.filter(common.contains) != savedOrder, undoesUnseen({ $0.order.filter(common.contains) }, savedOrder) {
            missed = true
            ids = Self.keepingOrder(of: latestOrder.filter(common.contains), placing: entries.map(\.id))
        }
        let order = PlistFile.encode(.array(ids.map(Value.string)), as: .xml)
        if mirror.read(mirror.orderPath(collection)) != order {
            do {
                try mirror.writeAtomically(order, to: mirror.orderPath(collection))
            } catch {
                log("cannot write \(mirror.orderPath(collection)): \(error)")
                unwritten = true
                return
            }
            onOrder(collection)
        }
    }

    /// `kept` (an order of rows) with the rows of `saved` that it lacks put in, each right after
    /// the row before it in `saved` (first when it has none).
    static func keepingOrder(of kept: [String], placing saved: [String]) -> [String] {
        var order = kept
        var present = Set(kept)
        for (index, id) in saved.enumerated() where !present.contains(id) {
            let position = index == 0 ? 0 : (order.firstIndex(of: saved[index - 1]).map { $0 + 1 } ?? order.count)
            order.insert(id, at: position)
            present.insert(id)
        }
        return order
    }

    static let readRetryMilliseconds: UInt64 = 2_000

    func readAgainLater(_ file: AttachedFile) {
        guard readRetries.insert(file.name).inserted else { return }
        clock.after(Self.readRetryMilliseconds) { [self] in
            readRetries.remove(file.name)
            read(file)
        }
    }
}
