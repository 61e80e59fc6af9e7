import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// The invariants of a seeded run that hold at every moment, not only once all is quiet,
/// checked between events every so often: every value typed is where a person finds it (a
/// record or list file on some machine, a conflict copy, a document an app is half-way through
/// saving, or the server's store) unless the one who replaced it saw it, and no conflict copy
/// is made of a conflict copy. A value left only in the agent's kept versions or a temp file
/// is lost to the person. The first violation fails the run with the virtual time it was seen
/// at.
final class SafetyChecks {
    private let world: SimulationWorld
    private let values: TypedValues
    /// Strings found in a file's bytes, by the bytes (most files do not change between checks).
    private var stringsByContent: [[UInt8]: Set<String>] = [:]
    /// Strings found in a record's fields as the store keeps them (canonical JSON).
    private var stringsByFields: [String: Set<String>] = [:]
    private(set) var checks = 0

    init(world: SimulationWorld, values: TypedValues) {
        self.world = world
        self.values = values
    }

    /// Checks every `interval` virtual milliseconds until `end`.
    func schedule(every interval: UInt64, until end: UInt64) {
        var time = interval
        while time <= end {
            world.scheduler.after(time - world.scheduler.now) { [self] in check() }
            time += interval
        }
    }

    func check() {
        guard world.failure == nil else { return }
        checks += 1
        let lost: [(value: String, place: String)]
        do {
            lost = try lostValues()
        } catch {
            return world.fail("at \(world.scheduler.now) ms: cannot read the server's store: \(error)")
        }
        if let first = lost.first {
            world.fail("at \(world.scheduler.now) ms: lost \(first.value), typed on \(first.place)" + (lost.count > 1 ? " (and \(lost.count - 1) more)" : ""))
        }
        for machine in world.machines {
            for (path, _) in world.fileSystem.files(under: machine.root)
            where (path as NSString).lastPathComponent.components(separatedBy: ".sync-conflict-").count > 2 {
                world.fail("at \(world.scheduler.now) ms: \(machine.name) holds a conflict copy of a conflict copy: \(path)")
            }
        }
    }

    /// Every value typed that is nowhere a person finds it and that nobody replaced on purpose,
    /// with where it was typed, in value order.
    func lostValues() throws -> [(value: String, place: String)] {
        let present = try presentValues()
        return values.typed.filter { !values.replacedOnPurpose.contains($0.key) && !present.contains($0.key) }
            .sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    private func presentValues() throws -> Set<String> {
        var present: Set<String> = []
        var seenContents: [[UInt8]: Set<String>] = [:]
        for machine in world.machines {
            for (_, bytes) in Self.visibleFiles(of: machine, in: world) {
                let strings = stringsByContent[bytes] ?? Self.strings(inPlist: bytes)
                seenContents[bytes] = strings
                present.formUnion(strings)
            }
        }
        for bytes in values.savesUnderWay.values {
            let strings = stringsByContent[bytes] ?? Self.strings(inPlist: bytes)
            seenContents[bytes] = strings
            present.formUnion(strings)
        }
        // Only what is still on some disk (or in an app's hands) stays cached.
        stringsByContent = seenContents
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
        world.fileSystem.files(under: machine.root).filter { file in
            let components = file.path.dropFirst(machine.root.count).split(separator: "/")
            if components.first == ".plistsync" { return components.count > 2 && components[1] == "files" && !components.last!.hasPrefix(".") }
            return !components.contains { $0.hasPrefix(".") }
        }
    }

    private static func strings(inPlist bytes: [UInt8]) -> Set<String> {
        var strings: Set<String> = []
        if let value = try? PlistFile.decode(bytes).0 { Simulation.collectStrings(value, into: &strings) }
        return strings
    }

    private static func strings(inJSON json: String) -> Set<String> {
        var strings: Set<String> = []
        if let fields = try? ValueJSON.decodeFields(Array(json.utf8)) { Simulation.collectStrings(.dictionary(fields), into: &strings) }
        return strings
    }
}
