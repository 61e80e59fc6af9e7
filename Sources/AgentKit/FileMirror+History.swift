import AgentDecisions
import Foundation
import PlistFormat
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
        knownOrder[collection] = order.compactMap { if case .string(let id) = $0 { id } else { nil } }
        history[collection] = versions.compactMap { version in
            guard case .dictionary(let saved) = version, case .dictionary(let records)? = saved["records"], case .bool(let byApp)? = saved["app"] else { return nil }
            var order: [String] = []
            if case .array(let ids)? = saved["order"] { order = ids.compactMap { if case .string(let id) = $0 { id } else { nil } } }
            return Version(records: records.compactMapValues { if case .dictionary(let fields) = $0 { fields } else { nil } }, order: order, byApp: byApp)
        }
    }

    /// Makes `entries` (the app file as just read or written, `bytes`) the newest version.
    func remember(_ collection: String, _ entries: [CollectionFile.Entry], _ bytes: [UInt8], byApp: Bool) {
        knownHash[collection] = ContentHash.of(bytes)
        knownOrder[collection] = entries.map(\.id)
        let records = Dictionary(entries.map { ($0.id, $0.fields) }, uniquingKeysWith: { first, _ in first })
        history[collection] = Self.trimmed((history[collection] ?? []) + [Version(records: records, order: entries.map(\.id), byApp: byApp)])
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

    /// The newest `historyLength` versions, always with the app's own last save among them
    /// (what it loaded is told from changes made since by comparing with it).
    static func trimmed(_ versions: [Version]) -> [Version] {
        guard versions.count > historyLength else { return versions }
        let newest = Array(versions.suffix(historyLength - 1))
        guard !newest.contains(where: \.byApp), let lastSave = versions.last(where: \.byApp) else { return Array(versions.suffix(historyLength)) }
        return [lastSave] + newest
    }
}
