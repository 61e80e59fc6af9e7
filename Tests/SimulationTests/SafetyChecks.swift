import Foundation
@testable import AgentKit
import PlistFormat
import SyncCore
import SyncProtocol

/// The invariants of a seeded run that hold at every moment, not only once all is quiet,
/// checked after every event: every value typed is where a person finds it (a
/// record or list file on some machine, a conflict copy, a document an app is half-way through
/// saving, or the server's store) unless the one who replaced it saw it, and no conflict copy
/// is made of a conflict copy. A value left only in the agent's kept versions or a temp file
/// is lost to the person. The first violation fails the run with the virtual time it was seen
/// at.
final class SafetyChecks {
    private let world: SimulationWorld
    private let values: TypedValues
    /// Values found in a file's bytes, by the bytes (most files do not change between checks).
    private var stringsByContent: [[UInt8]: Set<String>] = [:]
    /// Strings found in a record's fields as the store keeps them (canonical JSON).
    private var stringsByFields: [String: Set<String>] = [:]
    private(set) var checks = 0
    /// Per running agent, the server store it synced with and the revision of each record it
    /// had synced at the last check (collections being rebased on a restored store left out).
    private var syncedRevs: [ObjectIdentifier: (server: String?, revs: [String: [RecordID: Int64]])] = [:]
    private var revisionsCheckedAt = -1
    /// The counts of changes (files, server writes, values typed and replaced) at the last look
    /// for lost values.
    private var lastMoment: [Int] = []

    init(world: SimulationWorld, values: TypedValues) {
        self.world = world
        self.values = values
    }

    /// Checks after every event of the run: a value lost for a moment and found again (a file
    /// rewritten from a stale state, then merged back) is still a moment in which a crash
    /// would have lost it. Cheap when nothing changed: what the files and the server hold is
    /// read again only after they changed.
    func watch() {
        world.scheduler.afterEachEvent = { [unowned self] in check() }
    }

    func check() {
        guard world.failure == nil else { return }
        checks += 1
        // Nothing typed, replaced, written or saved since the last look: nothing can be lost.
        let moment = [world.fileSystem.generation, world.server.writes, values.typed.count, values.replacedOnPurpose.count]
        if moment != lastMoment {
            lastMoment = moment
            let lost: [(value: String, place: String)]
            do {
                lost = try lostValues()
            } catch {
                return world.fail("at \(world.scheduler.now) ms: cannot read the server's store: \(error)")
            }
            if let first = lost.first {
                world.fail("at \(world.scheduler.now) ms: lost \(first.value), typed on \(first.place)" + (lost.count > 1 ? " (and \(lost.count - 1) more)" : ""))
            }
            do {
                if let disagreement = try world.server.logDisagreement() { world.fail("at \(world.scheduler.now) ms: \(disagreement)") }
            } catch {
                return world.fail("at \(world.scheduler.now) ms: cannot read the server's change log: \(error)")
            }
        }
        checkRevisionsOnlyGoForward()
    }

    /// No conflict copy of a conflict copy in `files`.
    private func checkConflictCopies(_ files: [(path: String, bytes: [UInt8])], on machine: SimulatedMachine) {
        for (path, _) in files where (path as NSString).lastPathComponent.components(separatedBy: ".sync-conflict-").count > 2 {
            world.fail("at \(world.scheduler.now) ms: \(machine.name) holds a conflict copy of a conflict copy: \(path)")
        }
    }

    /// A running agent's synced revision of a record never goes back (an old change taken
    /// for news would undo a newer one), unless the record was forgotten, or the store was
    /// restored from a backup (its revisions start again from the backup's: the collection is
    /// rebased, then goes forward from there).
    private func checkRevisionsOnlyGoForward() {
        // Revisions move only when lines from the server reach an agent, or one starts.
        guard world.arrivals != revisionsCheckedAt else { return }
        revisionsCheckedAt = world.arrivals
        var seen: [ObjectIdentifier: (server: String?, revs: [String: [RecordID: Int64]])] = [:]
        for machine in world.machines {
            guard let core = machine.core else { continue }
            let agent = ObjectIdentifier(core)
            let revs = core.state.records.filter { !core.state.isRebasing($0.key) }.mapValues { $0.mapValues(\.rev) }
            seen[agent] = (core.state.serverID, revs)
            guard let before = syncedRevs[agent], before.server == core.state.serverID else { continue }
            for (collection, records) in revs {
                for (id, rev) in records {
                    guard let old = before.revs[collection]?[id], rev < old else { continue }
                    return world.fail("at \(world.scheduler.now) ms: \(machine.name)'s synced revision of \(collection)/\(id) went back from \(old) to \(rev)")
                }
            }
        }
        syncedRevs = seen
    }

    /// Every value typed that is nowhere a person finds it and that nobody replaced on purpose,
    /// with where it was typed, in value order.
    func lostValues() throws -> [(value: String, place: String)] {
        let present = try presentValues()
        return values.typed.filter { !values.replacedOnPurpose.contains($0.key) && !present.contains($0.key) }
            .sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// What the last look at the server found, and its count of writes then: unchanged, the
    /// store is not read again.
    private var lastServer: (writes: Int, present: Set<String>)?
    /// Per folder that holds records a person sees, the values in its files (only folders that
    /// changed are read again).
    private var valuesByFolder: [String: Set<String>]?

    private func presentValues() throws -> Set<String> {
        var present = presentInFiles()
        let server = try lastServer.flatMap { $0.writes == world.server.writes ? $0.present : nil } ?? presentOnServer()
        lastServer = (world.server.writes, server)
        present.formUnion(server)
        return present
    }

    private func presentInFiles() -> Set<String> {
        let changed = world.fileSystem.takeChangedFolders()
        var byFolder: [String: Set<String>]
        if let known = valuesByFolder {
            byFolder = known
            for folder in changed {
                guard let machine = world.machines.first(where: { folder == $0.root || folder.hasPrefix($0.root + "/") }), Self.isVisible(folder, of: machine)
                else { continue }
                let files = world.fileSystem.files(under: folder) { _ in false }
                checkConflictCopies(files, on: machine)
                byFolder[folder] = values(in: files)
            }
        } else {
            byFolder = [:]
            for machine in world.machines {
                for (folder, files) in Dictionary(grouping: Self.visibleFiles(of: machine, in: world), by: { ($0.path as NSString).deletingLastPathComponent }) {
                    checkConflictCopies(files, on: machine)
                    byFolder[folder] = values(in: files)
                }
            }
        }
        valuesByFolder = byFolder
        var present = byFolder.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        for bytes in values.savesUnderWay.values { present.formUnion(strings(of: bytes)) }
        return present
    }

    /// The values in the files of one folder a person sees (its hidden files left out).
    private func values(in files: [(path: String, bytes: [UInt8])]) -> Set<String> {
        var found: Set<String> = []
        for file in files where !(file.path as NSString).lastPathComponent.hasPrefix(".") { found.formUnion(strings(of: file.bytes)) }
        return found
    }

    /// The values in a plist's bytes, cached by the bytes (most files do not change between looks).
    private func strings(of bytes: [UInt8]) -> Set<String> {
        if let known = stringsByContent[bytes] { return known }
        let found = Self.strings(inPlist: bytes)
        if stringsByContent.count > 20_000 { stringsByContent.removeAll() }
        stringsByContent[bytes] = found
        return found
    }

    private func presentOnServer() throws -> Set<String> {
        var present: Set<String> = []
        var seenFields: [String: Set<String>] = [:]
        for fields in try world.server.storedFields() {
            let strings = stringsByFields[fields] ?? Self.strings(inJSON: fields)
            seenFields[fields] = strings
            present.formUnion(strings)
        }
        stringsByFields = seenFields
        return present
    }

    /// The files under a machine's folder that hold its records: record and list files,
    /// conflict copies, and the shadow folders of app files (`.plistsync/files/`, the records a
    /// list file is rebuilt from); not the agent's kept versions or other state, nor a hidden
    /// file (a save's temp file).
    static func visibleFiles(of machine: SimulatedMachine, in world: SimulationWorld) -> [(path: String, bytes: [UInt8])] {
        let state = machine.root + "/.plistsync"
        return world.fileSystem.files(under: machine.root) { $0 == state || isVisible($0, of: machine) }.filter { file in
            !(file.path as NSString).lastPathComponent.hasPrefix(".") && isVisible((file.path as NSString).deletingLastPathComponent, of: machine)
        }
    }

    /// Whether `folder` (on `machine`) holds files a person sees: no hidden folder on its
    /// way, but for the shadow folders of app files.
    private static func isVisible(_ folder: String, of machine: SimulatedMachine) -> Bool {
        let components = folder.dropFirst(machine.root.count).split(separator: "/")
        if components.first == ".plistsync" { return components.count > 1 && components[1] == "files" && !components.dropFirst(2).contains { $0.hasPrefix(".") } }
        return !components.contains { $0.hasPrefix(".") }
    }

    private static func strings(inPlist bytes: [UInt8]) -> Set<String> {
        var strings: Set<String> = []
        if let value = try? PlistFile.decode(bytes).0 { Simulation.collectTokens(value, into: &strings) }
        return strings
    }

    private static func strings(inJSON json: String) -> Set<String> {
        var strings: Set<String> = []
        if let fields = try? ValueJSON.decodeFields(Array(json.utf8)) { Simulation.collectTokens(.dictionary(fields), into: &strings) }
        return strings
    }
}
