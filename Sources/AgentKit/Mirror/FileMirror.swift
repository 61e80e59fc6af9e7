import AgentDecisions
import Foundation
import PlistFormat
import SyncCore
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
    let mirror: MirrorFolder
    let files: [AttachedFile]
    let status: AgentStatus
    /// What the app files held when last read or written here.
    let history: AppFileHistory
    /// Per collection, how the app file is written (as it was last read; written only by `read`).
    var kinds: [String: CollectionFile.Kind] = [:]
    private var rebuildScheduled = false
    /// The shadows' records, read once and then only where `MirrorFolder` saw a write.
    private var shadowCache: [String: [RecordID: Fields]] = [:]
    private var shadowOrders: [String: [RecordID]] = [:]
    /// Collections whose shadow changed since their app file was last rebuilt or read.
    private(set) var dirty: Set<String> = []
    /// Told when a record file or the order file of a shadow was changed here (the engine
    /// reconciles it).
    private unowned let outlet: any FileMirrorOutlet

    /// App files whose last save is read again soon (it could not be split into the shadow), and
    /// those written again soon (a full disk).
    private var readRetries: Set<String> = []
    private var rebuildRetries: Set<String> = []
    /// App files whose rebuild waits for the shadow's order file to place every row.
    private var awaitingOrder: Set<String> = []
    /// Collections whose app file was found at start holding a write of the agent's that the
    /// history lost, until the app's next save is read.
    var historyGaps: Set<String> = []
    let clock: any AgentClock
    /// This machine's name in the conflict copies it makes.
    let device: String

    init(mirror: MirrorFolder, files: [AttachedFile], status: AgentStatus, clock: any AgentClock, device: String, outlet: any FileMirrorOutlet) {
        self.outlet = outlet
        self.mirror = mirror
        self.clock = clock
        self.device = device
        self.files = files
        self.status = status
        history = AppFileHistory(mirror: mirror, clock: clock)
        mirror.attachedCollections = Set(files.map(\.collection))
        for file in files {
            try? mirror.ensureFolder(mirror.shadowFolder(file.collection))
            history.load(file.collection)
        }
    }

    /// Re-reads the shadow files written since the last call into the cache; the collections
    /// they belong to.
    func refreshCache() -> Set<String> {
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
    func shadowRecords(_ collection: String) -> [RecordID: Fields] {
        dirty.formUnion(refreshCache())
        if let cached = shadowCache[collection] { return cached }
        var records: [RecordID: Fields] = [:]
        for id in mirror.recordIDs(in: collection) {
            if let bytes = mirror.read(mirror.recordPath(collection, id)), let fields = try? PlistFile.decodeRecord(bytes).0 { records[id] = fields }
        }
        shadowCache[collection] = records
        return records
    }

    /// The shadow's order file, read again only after a write to it.
    func shadowOrder(_ collection: String) -> [RecordID] {
        if let cached = shadowOrders[collection] { return cached }
        var order: [RecordID] = []
        if let bytes = mirror.read(mirror.orderPath(collection)), case .array(let items)? = try? PlistFile.decode(bytes).0 {
            order = [RecordID](plistArray: items)
        }
        shadowOrders[collection] = order
        return order
    }

    func file(named name: String) -> AttachedFile? { files.first { $0.name == name } }

    func path(_ file: AttachedFile) -> String { mirror.root + "/" + file.name }

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
    /// Rows the order file does not place yet (their positions came in a batch whose order file
    /// is still to be written) wait for it up to `readRetryMilliseconds`: written by id
    /// meanwhile, they would show the app an order the list never had, and a drag back to it
    /// would read as a save from a load made before the real order (issue 46, item 4a).
    func rebuild(_ file: AttachedFile, waitingForOrder: Bool = true) {
        let collection = file.collection
        let records = shadowRecords(collection)
        let ids = Set(records.keys)
        guard !ids.isEmpty || history.knownHash(collection) != nil else { return }
        let listed = shadowOrder(collection)
        if waitingForOrder, !Set(listed).isSuperset(of: ids) {
            if awaitingOrder.insert(collection).inserted {
                clock.after(Self.readRetryMilliseconds) { [self] in
                    guard awaitingOrder.remove(collection) != nil else { return }
                    rebuild(file, waitingForOrder: false)
                }
            }
            return
        }
        awaitingOrder.remove(collection)
        let order = ids.ordered(by: listed)
        // The file as last read or written holds exactly this: nothing to encode or write.
        if history.knownHash(collection) != nil, history.knownOrder(collection) == order, history.versions(collection).last?.records == records { return }
        let entries = order.compactMap { id in records[id].map { CollectionFile.Entry(id: id.string, fields: $0) } }
        let kind = kinds[collection] ?? file.defaultKind
        let bytes = CollectionFile.encode(entries, idKey: file.idKey, as: kind)
        let hash = ContentHash.of(bytes)
        let target = path(file)
        guard hash != history.knownHash(collection) else { return }
        guard mirror.read(target).map(ContentHash.of) != hash else { return history.remember(collection, entries, bytes, byApp: false) }
        let expected = history.knownHash(collection)
        do {
            try mirror.writeAtomically(bytes, to: target, guard: .init(expectedHash: expected))
            history.remember(collection, entries, bytes, byApp: false)
        } catch MirrorError.superseded {
            // The app saved meanwhile: read that first; the file is then rebuilt with what the
            // save did not show (the shadow is still newer than the file).
            dirty.insert(collection)
            read(file)
        } catch {
            log("cannot write \(target): \(error)")
            rebuildAgainLater(file)
        }
    }

    static let readRetryMilliseconds: UInt64 = 2_000

    /// The app file could not be written (a full disk): written again soon, like a change that
    /// could not be applied.
    func rebuildAgainLater(_ file: AttachedFile) {
        guard rebuildRetries.insert(file.name).inserted else { return }
        clock.after(Self.readRetryMilliseconds) { [self] in
            rebuildRetries.remove(file.name)
            shadowsChanged(file.collection)
        }
    }

    func readAgainLater(_ file: AttachedFile) {
        guard readRetries.insert(file.name).inserted else { return }
        clock.after(Self.readRetryMilliseconds) { [self] in
            readRetries.remove(file.name)
            read(file)
        }
    }

    /// Saves the histories still waiting (the agent is stopping).
    func flush() {
        history.flush()
    }
}

extension FileMirror {
    func log(_ line: String) {
        outlet.log(line)
    }

    /// A shadow's record file (an id) or order file (nil) was written from the app's file.
    func shadowChanged(_ collection: String, _ id: RecordID?) {
        outlet.shadowChanged(collection, id)
    }
}

/// What a `FileMirror` tells the agent around it.
protocol FileMirrorOutlet: AnyObject {
    /// A shadow's record file (an id) or order file (nil) was written: the engine reconciles it.
    func shadowChanged(_ collection: String, _ id: RecordID?)
    func log(_ line: String)
}
