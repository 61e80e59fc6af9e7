import AgentDecisions
import Foundation
import PlistFormat
import SyncProtocol

/// Keeps each attached app file and its collection's shadow folder in step: a save of the app's
/// file is split into the shadow's record files and order file (which the sync engine pushes,
/// merging field by field), and after the engine applies remote changes the app's file is
/// rebuilt from the shadow, in its own format (XML, binary or keyed archive). A save the agent
/// has not read yet is never overwritten (the same guard as the order file).
///
/// A save is compared with the file as the agent last wrote or read it, not with the shadow:
/// an app that loaded the file before a remote change and saves it afterwards sends only what
/// it changed, and does not undo the change it never saw.
final class FileMirror {
    private let mirror: MirrorFolder
    private let files: [AttachedFile]
    private let status: AgentStatus
    /// Per collection, the hash of the app file as last read or written here.
    private var knownHash: [String: String] = [:]
    /// Per collection, the last versions of the app file read or written here (newest last, at
    /// most `historyLength`), and the newest one's order: a save is compared with the newest,
    /// and going back to a value from before a version the agent wrote undoes nothing the app
    /// saw (it loaded the file before that change).
    private var history: [String: [Version]] = [:]

    /// One version of an app file: its records, and whether the app saved it (read here) or the
    /// agent wrote it (changes from elsewhere the app may not have loaded yet).
    private struct Version {
        var records: [String: Fields]
        /// The rows in the file's order (empty in histories saved before it was kept).
        var order: [String]
        var byApp: Bool
    }
    private var knownOrder: [String: [String]] = [:]
    static let historyLength = 8
    /// Per collection, how the app file is written.
    private var kinds: [String: CollectionFile.Kind] = [:]
    private var rebuildScheduled = false
    /// The shadows' records, read once and then only where `MirrorFolder` saw a write.
    private var shadowCache: [String: [String: Fields]] = [:]
    private var shadowOrders: [String: [String]] = [:]
    /// Collections whose shadow changed since their app file was last rebuilt or read.
    private var dirty: Set<String> = []
    static let historySaveDelayMilliseconds: UInt64 = 1000
    static let historySaveMaxDelayMilliseconds: UInt64 = 10_000
    /// Per collection, versions remembered so far (a save waits until no newer one came), and
    /// since when (milliseconds) a version waits to be saved (present: a save is due).
    private var historyVersionCount: [String: Int] = [:]
    private var historyUnsavedSince: [String: UInt64] = [:]
    /// A record file or the order file of a shadow was changed here: the engine reconciles it.
    var onRecord: (String, String) -> Void = { _, _ in }
    var onOrder: (String) -> Void = { _ in }
    var log: (String) -> Void = { _ in }

    private let clock: any AgentClock

    init(mirror: MirrorFolder, files: [AttachedFile], status: AgentStatus, clock: any AgentClock) {
        self.mirror = mirror
        self.clock = clock
        self.files = files
        self.status = status
        mirror.attachedCollections = Set(files.map(\.collection))
        for file in files {
            try? mirror.ensureFolder(mirror.shadowFolder(file.collection))
            loadHistory(file.collection)
        }
    }

    /// The history, kept beside the shadow so it survives a restart.
    private func historyPath(_ collection: String) -> String { mirror.shadowFolder(collection) + ".history" }

    private func loadHistory(_ collection: String) {
        guard let bytes = mirror.read(historyPath(collection)), case .dictionary(let saved)? = try? PlistFile.decode(bytes).0,
            case .string(let hash)? = saved["hash"], case .array(let versions)? = saved["versions"], case .array(let order)? = saved["order"]
        else { return }
        knownHash[collection] = hash
        knownOrder[collection] = order.compactMap { if case .string(let id) = $0 { id } else { nil } }
        history[collection] = versions.compactMap { version in
            guard case .dictionary(let saved) = version, case .dictionary(let records)? = saved["records"], case .bool(let byApp)? = saved["app"] else { return nil }
            var order: [String] = []
            if case .array(let ids)? = saved["order"] { order = ids.compactMap { if case .string(let id) = $0 { id } else { nil } } }
            return Version(records: records.compactMapValues { if case .dictionary(let fields) = $0 { fields } else { nil } }, order: order, byApp: byApp)
        }
    }

    /// Makes `entries` (the app file as just read or written, `bytes`) the newest version.
    private func remember(_ collection: String, _ entries: [CollectionFile.Entry], _ bytes: [UInt8], byApp: Bool) {
        knownHash[collection] = ContentHash.of(bytes)
        knownOrder[collection] = entries.map(\.id)
        let records = Dictionary(entries.map { ($0.id, $0.fields) }, uniquingKeysWith: { first, _ in first })
        history[collection] = Array(((history[collection] ?? []) + [Version(records: records, order: entries.map(\.id), byApp: byApp)]).suffix(Self.historyLength))
        // Saved once the file has been quiet for a second (or after ten seconds of steady
        // saves): encoding eight versions of a large file per save would cost more than the
        // sync itself, and would stall the loop between two saves in a row. A crash loses at
        // most those seconds of history.
        historyVersionCount[collection, default: 0] += 1
        let count = historyVersionCount[collection]!
        if historyUnsavedSince[collection] == nil { historyUnsavedSince[collection] = clock.milliseconds }
        clock.after(Self.historySaveDelayMilliseconds) { [self] in
            guard let unsavedSince = historyUnsavedSince[collection] else { return }
            let waited = clock.milliseconds - unsavedSince
            if historyVersionCount[collection] == count || waited >= Self.historySaveMaxDelayMilliseconds { saveHistory(collection) }
        }
    }

    private func saveHistory(_ collection: String) {
        guard historyUnsavedSince.removeValue(forKey: collection) != nil, let hash = knownHash[collection], let versions = history[collection] else { return }
        let saved: Value = .dictionary([
            "hash": .string(hash),
            "order": .array((knownOrder[collection] ?? []).map(Value.string)),
            "versions": .array(versions.map {
                .dictionary(["records": .dictionary($0.records.mapValues(Value.dictionary)), "order": .array($0.order.map(Value.string)), "app": .bool($0.byApp)])
            }),
        ])
        try? mirror.writeAtomically(PlistFile.encode(saved, as: .binary), to: historyPath(collection))
    }

    /// Saves the histories still waiting (the agent is stopping).
    func flush() {
        for collection in historyUnsavedSince.keys { saveHistory(collection) }
    }

    /// Re-reads the shadow files written since the last call into the cache; the collections
    /// they belong to.
    private func refreshCache() -> Set<String> {
        var touched: Set<String> = []
        for path in mirror.takeTouchedShadowPaths() {
            guard let file = files.first(where: { path.hasPrefix(mirror.shadowFolder($0.collection) + "/") || path == mirror.orderPath($0.collection) })
            else { continue }
            touched.insert(file.collection)
            if path == mirror.orderPath(file.collection) {
                shadowOrders[file.collection] = nil
                continue
            }
            let name = (path as NSString).lastPathComponent
            guard shadowCache[file.collection] != nil, let id = MirrorFolder.recordID(forFileName: name),
                path == mirror.recordPath(file.collection, id)
            else { continue }
            shadowCache[file.collection]?[id] = mirror.read(path).flatMap { try? PlistFile.decodeRecord($0).0 }
        }
        return touched
    }

    /// The shadow's records now, from the cache.
    private func shadowRecords(_ collection: String) -> [String: Fields] {
        dirty.formUnion(refreshCache())
        if let cached = shadowCache[collection] { return cached }
        var records: [String: Fields] = [:]
        for id in mirror.recordIDs(in: collection) {
            if let bytes = mirror.read(mirror.recordPath(collection, id)), let fields = try? PlistFile.decodeRecord(bytes).0 { records[id] = fields }
        }
        shadowCache[collection] = records
        return records
    }

    /// The shadow's order file, read again only after a write to it.
    private func shadowOrder(_ collection: String) -> [String] {
        if let cached = shadowOrders[collection] { return cached }
        var order: [String] = []
        if let bytes = mirror.read(mirror.orderPath(collection)), case .array(let items)? = try? PlistFile.decode(bytes).0 {
            order = items.compactMap { if case .string(let id) = $0 { id } else { nil } }
        }
        shadowOrders[collection] = order
        return order
    }

    func file(named name: String) -> AttachedFile? { files.first { $0.name == name } }

    private func path(_ file: AttachedFile) -> String { mirror.root + "/" + file.name }

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
        /// the version before that held `wanted`. Going back from a value the app itself saved
        /// (a cancelled edit) is an edit.
        func undoesUnseen<T: Equatable>(_ value: (Version) -> T, _ wanted: T) -> Bool {
            guard var index = versions.indices.last else { return false }
            let newest = value(versions[index])
            while index > 0, value(versions[index - 1]) == newest { index -= 1 }
            guard index > 0, !versions[index].byApp else { return false }
            return value(versions[index - 1]) == wanted
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

    /// App files whose last save is read again soon (it could not be split into the shadow).
    private var readRetries: Set<String> = []
    static let readRetryMilliseconds: UInt64 = 2_000

    private func readAgainLater(_ file: AttachedFile) {
        guard readRetries.insert(file.name).inserted else { return }
        clock.after(Self.readRetryMilliseconds) { [self] in
            readRetries.remove(file.name)
            read(file)
        }
    }

    /// After the engine wrote to the shadows (a batch, an order file): rebuild the app files on
    /// the next loop turn, once for everything that happened in this one.
    func shadowsChanged(_ collection: String? = nil) {
        guard !files.isEmpty else { return }
        dirty.formUnion(refreshCache())
        if let collection { dirty.insert(collection) }
        guard !dirty.isEmpty, !rebuildScheduled else { return }
        rebuildScheduled = true
        clock.after(Self.rebuildDelayMilliseconds) { [self] in
            rebuildScheduled = false
            for file in files where dirty.remove(file.collection) != nil { rebuild(file) }
        }
    }

    static let rebuildDelayMilliseconds: UInt64 = 0

    /// Writes the app file from the shadow: records in the order file's order (then any others).
    private func rebuild(_ file: AttachedFile) {
        let collection = file.collection
        let records = shadowRecords(collection)
        let ids = Set(records.keys)
        guard !ids.isEmpty || knownHash[collection] != nil else { return }
        var order = shadowOrder(collection).filter(ids.contains)
        var seen = Set(order)
        order += ids.filter { seen.insert($0).inserted }.sorted()
        // The file as last read or written holds exactly this: nothing to encode or write.
        if knownHash[collection] != nil, knownOrder[collection] == order, history[collection]?.last?.records == records { return }
        let entries = order.compactMap { id in records[id].map { CollectionFile.Entry(id: id, fields: $0) } }
        let kind = kinds[collection] ?? file.defaultKind
        let bytes = CollectionFile.encode(entries, idKey: file.idKey, as: kind)
        let hash = ContentHash.of(bytes)
        let target = path(file)
        guard hash != knownHash[collection] else { return }
        guard mirror.read(target).map(ContentHash.of) != hash else { return remember(collection, entries, bytes, byApp: false) }
        let expected = knownHash[collection]
        do {
            try mirror.writeAtomically(bytes, to: target, guard: .init(expectedHash: expected))
            remember(collection, entries, bytes, byApp: false)
        } catch MirrorError.superseded {
            // The app saved meanwhile: read that first; the file is then rebuilt with what the
            // save did not show (the shadow is still newer than the file).
            dirty.insert(collection)
            read(file)
        } catch {
            log("cannot write \(target): \(error)")
        }
    }
}
