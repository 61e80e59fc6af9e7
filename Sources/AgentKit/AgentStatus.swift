import EventLoop
import Foundation
import SyncProtocol

/// What the agent is doing, for `plistsync status`: kept in memory and written (at most a few
/// times a second, only when something changed) to `DIR/.plistsync/status.json`.
final class AgentStatus {
    private let path: String
    private let loop: EventLoop
    private let configuration: AgentConfiguration
    private var timer: LoopTimer?
    private var dirty = false

    var connected = false
    var pending = 0
    /// `collection/id` → why the file does not parse.
    var unparseable: [String: String] = [:]
    /// `collection/id` or `collection/` → a refusal or failure worth a person's look.
    var problems: [String: String] = [:]
    private(set) var applied = 0
    private(set) var pushed = 0
    private(set) var conflicts = 0
    /// When the mirror last agreed with the server: a change applied or pushed, or a
    /// subscription caught up. Read back from the last status at start, so it survives restarts.
    private(set) var lastSync: Date?
    /// Conflict copies made (and found at start) that still exist: the versions a person should
    /// look at. Listed in status until deleted.
    private var conflictCopies: Set<String> = []
    var collectionsProvider: () -> [String: (seq: Int64, records: Int)] = { [:] }
    var lastError: () -> String? = { nil }

    init(loop: EventLoop, configuration: AgentConfiguration) {
        self.loop = loop
        self.configuration = configuration
        path = configuration.directory + "/.plistsync/status.json"
        if let bytes = FileManager.default.contents(atPath: path), case .dictionary(let previous)? = try? ValueJSON.decode(Array(bytes)),
            case .date(let date)? = previous["last_sync"]
        {
            lastSync = date
        }
        conflictCopies = Self.conflictCopies(under: configuration.directory)
    }

    /// Conflict copies in the collection folders of `root` (one level: DIR/<collection>/…).
    static func conflictCopies(under root: String) -> Set<String> {
        var found: Set<String> = []
        for folder in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where !folder.hasPrefix(".") {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/" + folder)) ?? []
            where name.contains(".sync-conflict-") && name.hasSuffix(".plist") {
                found.insert(root + "/" + folder + "/" + name)
            }
        }
        return found
    }

    func noteSynced() {
        lastSync = Date()
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

    /// Marks the status as changed; it is written within 200 ms.
    func changed() {
        dirty = true
        guard timer == nil else { return }
        let timer = LoopTimer(loop: loop)
        self.timer = timer
        timer.start(after: 200) { [self] in
            timer.close()
            self.timer = nil
            writeNow()
        }
    }

    func writeNow() {
        guard dirty else { return }
        dirty = false
        var collections: [String: Value] = [:]
        for (name, info) in collectionsProvider() {
            collections[name] = .dictionary(["seq": .integer(info.seq), "records": .integer(Int64(info.records))])
        }
        var document: [String: Value] = [
            "pid": .integer(Int64(getpid())),
            "connected": .bool(connected),
            "server": .string(configuration.server.description),
            "user": .string(configuration.user),
            "device": .string(configuration.device),
            "updated": .date(Date()),
            "pending": .integer(Int64(pending)),
            "applied": .integer(Int64(applied)),
            "pushed": .integer(Int64(pushed)),
            "conflicts": .integer(Int64(conflicts)),
            "collections": .dictionary(collections),
            "unparseable": .dictionary(unparseable.mapValues(Value.string)),
            "problems": .dictionary(problems.mapValues(Value.string)),
        ]
        if let error = lastError() { document["last_error"] = .string(error) }
        if let lastSync { document["last_sync"] = .date(lastSync) }
        conflictCopies = conflictCopies.filter { FileManager.default.fileExists(atPath: $0) }
        document["conflict_copies"] = .array(conflictCopies.sorted().map(Value.string))
        let text = ValueJSON.encode(.dictionary(document))
        try? MirrorFolder(root: configuration.directory).writeAtomically(Array(text.utf8), to: path)
    }

    func close() {
        timer?.close()
        timer = nil
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
