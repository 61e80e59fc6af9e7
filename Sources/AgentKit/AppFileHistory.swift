import AgentDecisions
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The last versions of each attached app file, who made them (the app or this agent), and
/// their saving beside the shadow, so a stale save is told from an edit across restarts
/// (`AppFileSave` compares a save with them).
final class AppFileHistory {
    private let mirror: MirrorFolder
    private let clock: any AgentClock
    /// Per collection, the hash of the app file as last read or written here.
    private var knownHashes: [String: String] = [:]
    /// Per collection, the newest version's order.
    private var knownOrders: [String: [RecordID]] = [:]
    /// Per collection, the last versions of the app file read or written here (newest last, at
    /// most `length`): a save is compared with the newest, and going back to a value from
    /// before a version the agent wrote undoes nothing the app saw (it loaded the file before
    /// that change).
    private var versionsByCollection: [String: [Version]] = [:]
    /// Per collection, versions remembered so far (a save waits until no newer one came), and
    /// since when (milliseconds) a version waits to be saved (present: a save is due).
    private var rememberedCount: [String: Int] = [:]
    private var unsavedSince: [String: UInt64] = [:]

    /// One version of an app file, as remembered.
    typealias Version = AppFileVersion
    static let length = 8
    static let saveDelayMilliseconds: UInt64 = 1000
    static let saveMaxDelayMilliseconds: UInt64 = 10_000

    init(mirror: MirrorFolder, clock: any AgentClock) {
        self.mirror = mirror
        self.clock = clock
    }

    func knownHash(_ collection: String) -> String? {
        knownHashes[collection]
    }

    /// The app file is gone: what it held is no longer known (its versions still are).
    func forgetHash(_ collection: String) {
        knownHashes[collection] = nil
    }

    func knownOrder(_ collection: String) -> [RecordID]? {
        knownOrders[collection]
    }

    func versions(_ collection: String) -> [Version] {
        versionsByCollection[collection] ?? []
    }

    /// The history, kept beside the shadow so it survives a restart.
    private func path(_ collection: String) -> String { mirror.shadowFolder(collection) + ".history" }

    func load(_ collection: String) {
        guard let bytes = mirror.read(path(collection)), case .dictionary(let saved)? = try? PlistFile.decode(bytes).0,
            case .string(let hash)? = saved["hash"], case .array(let versions)? = saved["versions"], case .array(let order)? = saved["order"]
        else { return }
        knownHashes[collection] = hash
        knownOrders[collection] = [RecordID](plistArray: order)
        versionsByCollection[collection] = versions.compactMap { version in
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
        knownHashes[collection] = ContentHash.of(bytes)
        let order = entries.map { RecordID($0.id) }
        knownOrders[collection] = order
        versionsByCollection[collection] = Self.trimmed(versions(collection) + [Version(records: Self.records(entries), order: order, byApp: byApp)])
        // Saved once the file has been quiet for a second (or after ten seconds of steady
        // saves): encoding eight versions of a large file per save would cost more than the
        // sync itself, and would stall the loop between two saves in a row. A crash loses at
        // most those seconds of history.
        rememberedCount[collection, default: 0] += 1
        let count = rememberedCount[collection]!
        if unsavedSince[collection] == nil { unsavedSince[collection] = clock.milliseconds }
        clock.after(Self.saveDelayMilliseconds) { [self] in
            guard let since = unsavedSince[collection] else { return }
            let waited = clock.milliseconds - since
            if rememberedCount[collection] == count || waited >= Self.saveMaxDelayMilliseconds { save(collection) }
        }
    }

    private func save(_ collection: String) {
        guard unsavedSince.removeValue(forKey: collection) != nil, let hash = knownHashes[collection], let versions = versionsByCollection[collection]
        else { return }
        let saved: Value = .dictionary([
            "hash": .string(hash),
            "order": (knownOrders[collection] ?? []).plistArray,
            "versions": .array(versions.map { version in
                // Rows as [id, fields] pairs: a dictionary's keys would merge ids that differ
                // only in normalisation.
                let rows = version.records.sorted { $0.key < $1.key }.map { Value.array([.string($0.key.string), .dictionary($0.value)]) }
                return .dictionary(["rows": .array(rows), "order": version.order.plistArray, "app": .bool(version.byApp)])
            }),
        ])
        try? mirror.writeAtomically(PlistFile.encode(saved, as: .binary), to: path(collection))
    }

    /// The rows of an app file by id (the first of an id listed twice).
    static func records(_ entries: [CollectionFile.Entry]) -> [RecordID: Fields] {
        Dictionary(entries.map { (RecordID($0.id), $0.fields) }, uniquingKeysWith: { first, _ in first })
    }

    /// Saves the histories still waiting (the agent is stopping).
    func flush() {
        for collection in unsavedSince.keys { save(collection) }
    }

    /// The newest `length` versions, always with the app's own last save among them
    /// (what it loaded is told from changes made since by comparing with it).
    static func trimmed(_ versions: [Version]) -> [Version] {
        guard versions.count > length else { return versions }
        let newest = Array(versions.suffix(length - 1))
        guard !newest.contains(where: \.byApp), let lastSave = versions.last(where: \.byApp) else { return Array(versions.suffix(length)) }
        return [lastSave] + newest
    }
}
