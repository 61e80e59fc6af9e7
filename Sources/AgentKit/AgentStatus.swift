import EventLoop
import Foundation
import SyncProtocol

/// What the agent is doing, for `plistsync status`: kept in memory and written (at most a few
/// times a second, only when something changed) to `DIR/.plistsync/status.json`.
final class AgentStatus {
    private let path: String
    /// The mirror folder's files, through which status.json is read and written (an instance
    /// of its own: a status write is never part of the engine's batch of writes).
    private let mirror: MirrorFolder
    private let clock: any AgentClock
    private let configuration: AgentConfiguration
    /// Whether status.json is read at start and written (not in the simulation tests).
    private let persistent: Bool
    private var writeScheduled = false
    private var dirty = false

    private(set) var connected = false
    /// The server in use, when `--server` names several.
    private(set) var server: SocketAddress?
    private(set) var pending = 0
    /// `collection/id` → why the file does not parse.
    private(set) var unparseable: [String: String] = [:]
    /// `collection/id` or `collection/` → a refusal or failure worth a person's look.
    private(set) var problems: [String: String] = [:]
    private(set) var applied = 0
    private(set) var pushed = 0
    private(set) var conflicts = 0
    /// When the mirror last agreed with the server: a change applied or pushed, or a
    /// subscription caught up. Read back from the last status at start, so it survives restarts.
    private(set) var lastSync: Date?
    /// Conflict copies made (and found at start) that still exist: the versions a person should
    /// look at. Listed in status until deleted.
    private var conflictCopies: Set<String> = []
    /// Problems and unparseable files the previous run reported, shown until their collection
    /// is scanned again (a restart while the server is unreachable must not hide them).
    private var carriedProblems: [String: String] = [:]
    private var carriedUnparseable: [String: String] = [:]
    /// The synced state, for each collection's seq and record count.
    private let state: AgentState
    /// Why the server link's last attempt failed (`linkErrorChanged`).
    private var lastError: String?

    init(clock: any AgentClock, configuration: AgentConfiguration, mirror: MirrorFolder, state: AgentState, persistent: Bool = true) {
        self.clock = clock
        self.state = state
        self.configuration = configuration
        self.mirror = MirrorFolder(root: mirror.root, fileSystem: mirror.fileSystem)
        self.persistent = persistent
        path = mirror.stateFolder + "/status.json"
        guard persistent else { return }
        if let bytes = mirror.fileSystem.contents(at: path), case .dictionary(let previous)? = try? ValueJSON.decode(bytes) {
            if case .date(let date)? = previous["last_sync"] { lastSync = date }
            carriedProblems = Self.strings(previous["problems"])
            carriedUnparseable = Self.strings(previous["unparseable"])
        }
        conflictCopies = Self.conflictCopies(under: mirror.root, in: mirror.fileSystem)
    }

    /// Conflict copies in the collection folders of `root` (one level: DIR/<collection>/…).
    static func conflictCopies(under root: String, in fileSystem: any FileSystem) -> Set<String> {
        var found: Set<String> = []
        for folder in fileSystem.names(in: root) ?? [] where !folder.hasPrefix(".") {
            for name in fileSystem.names(in: root + "/" + folder) ?? []
            where name.contains(MirrorFolder.conflictMarker) && name.hasSuffix(".plist") {
                found.insert(root + "/" + folder + "/" + name)
            }
        }
        return found
    }

    private static func strings(_ value: Value?) -> [String: String] {
        guard case .dictionary(let entries)? = value else { return [:] }
        return entries.compactMapValues { if case .string(let text) = $0 { text } else { nil } }
    }

    /// A collection was scanned afresh: what the previous run said about it is replaced by what
    /// this run finds.
    func rechecked(_ collection: String) {
        let isAbout = { (key: String) in key.hasPrefix(collection + "/") || key == collection + ".order.plist" }
        carriedProblems = carriedProblems.filter { !isAbout($0.key) }
        carriedUnparseable = carriedUnparseable.filter { !isAbout($0.key) }
    }

    func noteSynced() {
        lastSync = clock.now
    }

    func noteApplied() {
        applied += 1
        if applied % 1000 == 0 { AgentLog.info("applied \(applied) changes from the server") }
    }

    func notePushed() {
        pushed += 1
        if pushed % 1000 == 0 { AgentLog.info("pushed \(pushed) local changes") }
    }

    func noteConflict(_ copy: String) {
        conflicts += 1
        conflictCopies.insert(copy)
    }

    /// A conflict copy another mirror made, received from the server.
    func noteConflictCopy(_ copy: String) {
        conflictCopies.insert(copy)
    }

    func connected(to server: SocketAddress?) {
        connected = true
        self.server = server
    }

    func disconnected() {
        connected = false
    }

    /// Local changes not yet on the server.
    func setPending(_ count: Int) {
        pending = count
    }

    /// A refusal or failure about `key` (`collection/id` or `collection/`) worth a person's look.
    func report(_ problem: String, for key: String) {
        problems[key] = problem
    }

    func clearProblem(for key: String) {
        problems[key] = nil
    }

    /// Why the file of `key` (`collection/id`, or an app file's name) does not parse.
    func reportUnparseable(_ reason: String, for key: String) {
        unparseable[key] = reason
    }

    func clearUnparseable(for key: String) {
        unparseable[key] = nil
    }

    /// Marks the status as changed; it is written within 200 ms.
    func changed() {
        dirty = true
        guard !writeScheduled else { return }
        writeScheduled = true
        clock.after(200) { [self] in
            writeScheduled = false
            writeNow()
        }
    }

    /// The server link's last error changed (nil: it works again).
    func linkErrorChanged(_ error: String?) {
        lastError = error
        changed()
    }

    func writeNow() {
        guard dirty, persistent else { return }
        dirty = false
        var collections: [String: Value] = [:]
        for (name, seq) in state.lastSeq where Names.collection(ofConflicts: name) == nil {
            collections[name] = .dictionary(["seq": .integer(seq), "records": .integer(Int64(state.liveCount[name] ?? 0))])
        }
        var document: [String: Value] = [
            "pid": .integer(Int64(getpid())),
            "connected": .bool(connected),
            "server": .string((server ?? configuration.server).description),
            "user": .string(configuration.user),
            "device": .string(configuration.device),
            "updated": .date(Date()),
            "pending": .integer(Int64(pending)),
            "applied": .integer(Int64(applied)),
            "pushed": .integer(Int64(pushed)),
            "conflicts": .integer(Int64(conflicts)),
            "collections": .dictionary(collections),
            "unparseable": .dictionary(carriedUnparseable.merging(unparseable) { _, now in now }.mapValues(Value.string)),
            "problems": .dictionary(carriedProblems.merging(problems) { _, now in now }.mapValues(Value.string)),
        ]
        if let error = lastError { document["last_error"] = .string(error) }
        if let lastSync { document["last_sync"] = .date(lastSync) }
        conflictCopies = conflictCopies.filter { mirror.fileSystem.kind(at: $0) != .missing }
        document["conflict_copies"] = .array(conflictCopies.sorted().map(Value.string))
        write(document)
    }

    /// Status files are padded with spaces to whole blocks, so that on a full disk (when no temp
    /// file can be written) the status is still rewritten in place, in blocks the file already has.
    static let blockBytes = 4096
    private var cannotWriteLogged = false

    private func write(_ document: [String: Value]) {
        let bytes = Self.padded(ValueJSON.encode(.dictionary(document)))
        do {
            try mirror.writeAtomically(bytes, to: path)
            cannotWriteLogged = false
        } catch {
            var compact = document
            compact["collections"] = nil
            compact["conflict_copies"] = nil
            compact["disk_full_or_unwritable"] = .string("\(error)")
            let written = mirror.fileSystem.overwriteInPlace(path, with: Self.padded(ValueJSON.encode(.dictionary(compact))))
            if !cannotWriteLogged {
                AgentLog.info("cannot write \(path): \(error)\(written ? "; rewrote it in place instead" : "")")
                cannotWriteLogged = true
            }
        }
    }

    static func padded(_ text: String) -> [UInt8] {
        var bytes = Array((text + "\n").utf8)
        let size = (bytes.count + blockBytes - 1) / blockBytes * blockBytes
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: size - bytes.count))
        return bytes
    }

    func close() {
        dirty = true
        writeNow()
    }
}

/// One-line log records on stderr for the agent.
enum AgentLog {
    static func info(_ message: String) {
        FileHandle.standardError.write(Data("\(ISO8601UTC.format(Date())) agent \(message)\n".utf8))
    }
}
