import SyncCore
import SyncProtocol

/// One version of an app's whole-list file as the agent remembers it: its rows, their order,
/// and whether the app saved it (read by the agent) or the agent wrote it (changes from
/// elsewhere the app may not have loaded yet).
public struct AppFileVersion: Equatable, Sendable {
    public var records: [RecordID: Fields]
    /// The rows in the file's order (empty in histories saved before it was kept).
    public var order: [RecordID]
    public var byApp: Bool

    public init(records: [RecordID: Fields], order: [RecordID], byApp: Bool) {
        self.records = records
        self.order = order
        self.byApp = byApp
    }
}

/// What a save of an app's whole-list file means for the collection's records (DESIGN.md §5,
/// attached files): only what the app changed since it saw the file goes in; what changed
/// elsewhere meanwhile (fields, deletes, moves, new rows) is not undone by a save from a load
/// made before it. Pure: the agent reads the file and its history, this decides, the agent
/// writes the shadow record files and the order file.
public struct AppFileSave: Equatable, Sendable {
    /// Rows to write into the shadow, with their new fields.
    public var writes: [Write] = []
    /// Rows the app deleted.
    public var removes: [RecordID] = []
    /// Rows of `removes` that changed elsewhere since the app's last save (or with no save of
    /// the app remembered): the app may not have seen what it deleted, so the record is kept as
    /// a conflict copy.
    public var keepRemoved: Set<RecordID> = []
    /// The shadow's new order, when the save moved rows or added some.
    public var order: [RecordID]?
    /// The save did not show something (a change it never saw, a row added elsewhere): the
    /// file is rebuilt to show it.
    public var missed = false

    /// One shadow record to write. `keepReplaced`: the app changed a field that changed
    /// elsewhere since its own last save, or since the file last showed it (it may have saved
    /// over a value it never saw), so the record it replaces is kept as a conflict copy.
    public struct Write: Equatable, Sendable {
        public var id: RecordID
        public var fields: Fields
        public var keepReplaced: Bool

        public init(id: RecordID, fields: Fields, keepReplaced: Bool) {
            self.id = id
            self.fields = fields
            self.keepReplaced = keepReplaced
        }
    }

    /// Decides for `saved` (the rows as the app saved them, in its order) given `versions` (the
    /// file as last read or written, newest last, its order `latestOrder`), `shadow` (the
    /// collection's records now) and `shadowOrder` (their order now, which may be ahead of the
    /// file: a move that arrived while the app saved).
    /// `historyGap`: versions the agent wrote may be missing from `versions` (a crash cost the
    /// newest history), so any value the save replaces may be one the app never showed.
    public static func read(_ saved: [(id: RecordID, fields: Fields)], versions: [AppFileVersion], latestOrder: [RecordID],
                            shadow: [RecordID: Fields], shadowOrder: [RecordID]? = nil, historyGap: Bool = false) -> AppFileSave {
        var result = AppFileSave()
        let latest = versions.last?.records
        /// Whether the file showed another value than its newest since the app's own last save
        /// (with none remembered, in any version remembered): a save may come from a load made
        /// before the newest. (A file the app only ever loaded as the agent first wrote it has
        /// nothing it could have missed: its first edit makes no copy.)
        func changedSinceLastSave<T: Equatable>(_ value: (AppFileVersion) -> T) -> Bool {
            if historyGap { return true }
            guard let newest = versions.last.map(value) else { return false }
            let since = versions.lastIndex(where: \.byApp) ?? 0
            return versions[since...].contains { value($0) != newest }
        }
        /// Whether `value(version)` going back to `wanted` undoes a change the app never saw:
        /// the newest value appeared in a version the agent wrote, the app has not saved it
        /// since, and `wanted` is a value the file held before it, since the app's own last
        /// save (the app saved a load made before the change). Going back from a value the app
        /// itself saved (a cancelled edit, a drag back after saving the newest order) is an edit.
        func undoesUnseen<T: Equatable>(_ value: (AppFileVersion) -> T, _ wanted: T) -> Bool {
            guard var index = versions.indices.last else { return false }
            let newest = value(versions[index])
            while index > 0, value(versions[index - 1]) == newest { index -= 1 }
            guard !versions[index...].contains(where: \.byApp) else { return false }
            let since = versions[..<index].lastIndex(where: \.byApp) ?? 0
            return versions[since..<index].contains { value($0) == wanted }
        }
        for (id, savedFields) in saved {
            // Unchanged since the file was last seen: nothing to read or send.
            if latest?[id] == savedFields { continue }
            if let latest, latest[id] == nil, undoesUnseen({ $0.records[id] != nil }, true) {
                // Deleted elsewhere after the app loaded the file: a row the app left as it
                // loaded it is not brought back; one it edited is (an edit beats a delete).
                let loaded = versions.last { $0.records[id] != nil }?.records[id]
                if loaded == nil || loaded == savedFields {
                    result.missed = true
                    continue
                }
            }
            var fields = savedFields
            var keepReplaced = false
            if latest?[id] == nil, let existing = shadow[id], existing != savedFields {
                // A row the file never showed, made by the app while a record of that id came
                // from elsewhere (simulation seed 176): the save goes in, and the record it
                // replaces is kept.
                keepReplaced = true
            } else if let before = latest?[id], var updated = shadow[id] {
                // Only what the app changed since it saw the file goes on top of the shadow.
                let changed = Set(before.keys).union(savedFields.keys).filter { before[$0] != savedFields[$0] }
                let keys = changed.filter { key in !undoesUnseen({ $0.records[id]?[key] }, savedFields[key]) }
                if keys.count < changed.count { result.missed = true }
                guard !keys.isEmpty else { continue }
                let current = updated
                for key in keys { updated[key] = savedFields[key] }
                fields = updated
                // A value the save replaces that the app may not have shown: it changed since
                // the app's own last save, or reached the shadow after the file last showed it.
                keepReplaced = keys.contains { key in
                    current[key] != savedFields[key] && (current[key] != before[key] || changedSinceLastSave { $0.records[id]?[key] })
                }
            }
            guard fields != shadow[id] else { continue }
            result.writes.append(Write(id: id, fields: fields, keepReplaced: keepReplaced))
        }
        // Deleted by the app: rows the file had and the save no longer lists, unless the row
        // came in a version the agent wrote after the app loaded the file (it never saw it), or
        // changed elsewhere since the file last showed it (an edit beats a delete). A row that
        // changed elsewhere since the app's last save may have been deleted from a load made
        // before that change (the two saves look the same): its record is kept, as for a field.
        let listed = Set(saved.map(\.id))
        for id in shadow.keys.sorted() where !listed.contains(id) {
            guard latest?[id] != nil, latest?[id] == shadow[id], !undoesUnseen({ $0.records[id] != nil }, false) else {
                result.missed = true
                continue
            }
            result.removes.append(id)
            // With no save of the app remembered (a crash can cost the newest history), the row
            // may have come after its load: kept.
            if !versions.contains(where: \.byApp) || changedSinceLastSave({ $0.records[id] }) { result.keepRemoved.insert(id) }
        }
        // Reordered by the app: only when its order of the rows it saw differs from the newest,
        // and does not just go back to the order before a version the agent wrote (a save from
        // a load made before a move elsewhere keeps that move, as it keeps other fields).
        let savedIDs = saved.map(\.id)
        let common = Set(latestOrder).intersection(listed)
        let savedOrder = savedIDs.filter(common.contains)
        let newestOrder = latestOrder.filter(common.contains)
        guard versions.isEmpty || newestOrder != savedOrder || savedIDs.contains(where: { !common.contains($0) }) else { return result }
        var staleOrder = !versions.isEmpty && newestOrder != savedOrder && undoesUnseen({ $0.order.filter(common.contains) }, savedOrder)
        #if SIMULATION_MUTATIONS
        if Mutation.active == .staleSaveOrderRuleRemoved { staleOrder = false }
        #endif
        // A save that moved nothing (it only added rows) or went back to an order it never saw
        // places its new rows into the collection's order as it is now.
        let removed = Set(result.removes)
        let current = shadowOrder.map { $0.filter { !removed.contains($0) } } ?? newestOrder
        if staleOrder {
            result.missed = true
            result.order = keepingOrder(of: current, placing: savedIDs)
        } else if newestOrder == savedOrder {
            result.order = keepingOrder(of: current, placing: savedIDs)
        } else {
            result.order = savedIDs
        }
        // Only rows the collection will hold: a row the save lists but that is not brought back
        // (deleted elsewhere, only moved here) would otherwise sit in the order unplaced, and
        // the place the app gives it when it does come back would read as no move (simulation
        // seed 8826: the drag was lost).
        let held = Set(shadow.keys).union(result.writes.map(\.id)).subtracting(removed)
        result.order = result.order?.filter(held.contains)
        return result
    }

    /// `kept` (an order of rows) with the rows of `saved` that it lacks put in, each right after
    /// the row before it in `saved` (first when it has none).
    public static func keepingOrder(of kept: [RecordID], placing saved: [RecordID]) -> [RecordID] {
        var order = kept
        var present = Set(kept)
        for (index, id) in saved.enumerated() where !present.contains(id) {
            let position = index == 0 ? 0 : (order.firstIndex(of: saved[index - 1]).map { $0 + 1 } ?? order.count)
            order.insert(id, at: position)
            present.insert(id)
        }
        return order
    }
}
