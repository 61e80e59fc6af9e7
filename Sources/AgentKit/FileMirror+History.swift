import AgentDecisions
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The last versions of each app file, who made them, and their saving beside the shadow
/// (so a stale save is told from an edit across restarts).
extension FileMirror {
    /// The history, kept beside the shadow so it survives a restart.
    func historyPath(_ collection: String) -> String { mirror.shadowFolder(collection) + ".history" }

    func loadHistory(_ collection: String) {
        guard let bytes = mirror.read(historyPath(collection)), case .dictionary(let saved)? = try? PlistFile.decode(bytes).0,
            case .string(let hash)? = saved["hash"], case .array(let versions)? = saved["versions"], case .array(let order)? = saved["order"]
        else { return }
        knownHash[collection] = hash
        knownOrder[collection] = [RecordID](plistArray: order)
        history[collection] = versions.compactMap { version in
            guard case .dictionary(let saved) = version, case .bool(let byApp)? = saved["app"] else { return nil }
            var records: [RecordID: Fields] = [:]
            if case .array(let rows)? = saved["rows"] {
                for case .array(let row) in rows where row.count == 2 {
                    if case .string(let id) = row[0], case .dictionary(let fields) = row[1] { records[RecordID(id)] = fields }
                }
            } else if case .dictionary(let byID)? = saved["records"] {
                // Written before 'rows': ids that differ only in normalisation were one key.
                for case (let id, .dictionary(let fields)) in byID { records[RecordID(id)] = fields }
            } else {
                return nil
            }
            var order: [RecordID] = []
            if case .array(let ids)? = saved["order"] { order = [RecordID](plistArray: ids) }
            return Version(records: records, order: order, byApp: byApp)
        }
    }

    /// Makes `entries` (the app file as just read or written, `bytes`) the newest version.
    func remember(_ collection: String, _ entries: [CollectionFile.Entry], _ bytes: [UInt8], byApp: Bool) {
        knownHash[collection] = ContentHash.of(bytes)
        let order = entries.map { RecordID($0.id) }
        knownOrder[collection] = order
        history[collection] = Self.trimmed((history[collection] ?? []) + [Version(records: Self.records(entries), order: order, byApp: byApp)])
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

    func saveHistory(_ collection: String) {
        guard historyUnsavedSince.removeValue(forKey: collection) != nil, let hash = knownHash[collection], let versions = history[collection] else { return }
        let saved: Value = .dictionary([
            "hash": .string(hash),
            "order": (knownOrder[collection] ?? []).plistArray,
            "versions": .array(versions.map { version in
                // Rows as [id, fields] pairs: a dictionary's keys would merge ids that differ
                // only in normalisation.
                let rows = version.records.sorted { $0.key < $1.key }.map { Value.array([.string($0.key.string), .dictionary($0.value)]) }
                return .dictionary(["rows": .array(rows), "order": version.order.plistArray, "app": .bool(version.byApp)])
            }),
        ])
        try? mirror.writeAtomically(PlistFile.encode(saved, as: .binary), to: historyPath(collection))
    }

    /// The rows of an app file by id (the first of an id listed twice).
    static func records(_ entries: [CollectionFile.Entry]) -> [RecordID: Fields] {
        Dictionary(entries.map { (RecordID($0.id), $0.fields) }, uniquingKeysWith: { first, _ in first })
    }

    /// Saves the histories still waiting (the agent is stopping).
    func flush() {
        for collection in historyUnsavedSince.keys { saveHistory(collection) }
    }

    /// The newest `historyLength` versions, always with the app's own last save among them
    /// (what it loaded is told from changes made since by comparing with it).
    static func trimmed(_ versions: [Version]) -> [Version] {
        guard versions.count > historyLength else { return versions }
        let newest = Array(versions.suffix(historyLength - 1))
        guard !newest.contains(where: \.byApp), let lastSave = versions.last(where: \.byApp) else { return Array(versions.suffix(historyLength)) }
        return [lastSave] + newest
    }
}
