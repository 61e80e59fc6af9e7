import Foundation
@testable import AgentKit
import PlistFormat
import SyncProtocol

/// Apps that keep a whole list in one file (`list.plist`, an array of dictionaries, attached
/// as collection `a`) on each machine: each loads the file now and then, edits its copy in
/// memory (a field, a new row, a deleted row, a row moved) and saves the whole list, sometimes
/// from a load that is no longer current, atomically or in place.
final class SimulatedListApp {
    static let file = AttachedFile(name: "list.plist", collection: "a", idKey: "id")
    private let world: SimulationWorld
    private let values: TypedValues
    /// Per machine, the list as the app last loaded (or saved) it.
    private var loaded: [String: [[String: Value]]] = [:]

    init(world: SimulationWorld, values: TypedValues) {
        self.world = world
        self.values = values
    }

    private var fs: SimulatedFileSystem { world.fileSystem }
    private func path(_ machine: SimulatedMachine) -> String { machine.root + "/" + Self.file.name }

    /// The rows of a machine's list file, nil when it is missing or does not parse.
    func rows(_ machine: SimulatedMachine) -> [[String: Value]]? {
        guard let bytes = fs.contents(at: path(machine)), case .array(let items)? = try? PlistFile.decode(bytes).0 else { return nil }
        return items.compactMap { if case .dictionary(let row) = $0 { row } else { nil } }
    }

    /// The first machine's app has a list before anyone syncs.
    func seed(_ machine: SimulatedMachine) throws {
        try fs.makeFolder(machine.root)
        let row: [String: Value] = ["id": .string("Ada"), "x": .string(values.new("\(machine.name) a/Ada.x seeded"))]
        try fs.writeFile(path(machine), PlistFile.encode(.array([.dictionary(row)]), as: .xml), durable: true)
    }

    private func random(_ range: Range<Int>) -> Int { Int.random(in: range, using: &world.scheduler.random) }

    /// Files an in-place save is still being written to (the app saves one at a time).
    private var saving: Set<String> = []

    /// One action of the person using the app on `machine`.
    func act(on machine: SimulatedMachine) {
        guard !saving.contains(path(machine)) else { return }
        // Most edits start from a fresh load, some from the copy loaded a while ago (an app that
        // does not reload its file when it changes).
        let roll = random(0..<100)
        let fresh = random(0..<100) < 60
        if loaded[machine.name] == nil || fresh { loaded[machine.name] = rows(machine) }
        guard var list = loaded[machine.name] else { return }
        let place = "\(machine.name) a/"
        var replaced: [String] = []
        var added: [String] = []
        if list.isEmpty || roll < 20 {
            let id = SimulatedApps.ids[random(0..<SimulatedApps.ids.count)]
            guard !list.contains(where: { $0["id"] == .string(id) }) else { return }
            let value = values.new(place + id + ".x at \(world.scheduler.now) ms")
            added.append(value)
            list.insert(["id": .string(id), "x": .string(value)], at: random(0..<(list.count + 1)))
        } else if roll < 75 {
            let index = random(0..<list.count)
            let field = ["x", "y"][random(0..<2)]
            if case .string(let old)? = list[index][field] { replaced.append(old) }
            let rowID = if case .string(let id)? = list[index]["id"] { id } else { "?" }
            let value = values.new(place + "\(rowID).\(field) at \(world.scheduler.now) ms")
            added.append(value)
            list[index][field] = .string(value)
        } else if roll < 85 {
            let row = list.remove(at: random(0..<list.count))
            for (key, value) in row where key != "id" { if case .string(let text) = value { replaced.append(text) } }
        } else {
            guard list.count > 1 else { return }
            let row = list.remove(at: random(0..<list.count))
            list.insert(row, at: random(0..<(list.count + 1)))
        }
        let bytes = PlistFile.encode(.array(list.map(Value.dictionary)), as: .xml)
        machine.note("app saves list.plist: \(list.map { ValueJSON.encode(fields: $0) }.joined(separator: ", "))")
        let saved: Bool
        if random(0..<4) == 0 {
            saved = (try? fs.overwrite(path(machine), with: Array(bytes.prefix(bytes.count / 2)))) != nil
            if saved {
                saving.insert(path(machine))
                world.scheduler.after(UInt64(random(1..<60))) { [self] in finishInPlace(path(machine), bytes) }
            }
        } else {
            let temp = machine.root + "/.list.plist.saving"
            saved = (try? fs.writeFile(temp, bytes, durable: true)) != nil
            if saved { try? fs.rename(temp, to: path(machine)) }
        }
        guard saved else {
            machine.note("app could not save list.plist: disk full")
            for value in added { values.unsaved(value) }
            return
        }
        for value in replaced { values.replaced(value) }
        let before = loaded[machine.name]
        loaded[machine.name] = list
        // Now and then the person undoes an edit a moment later: the app saves the list it had
        // before (a cancelled edit, sent like any edit), unless it has been saved again since.
        if let before, added.count == 1, replaced.count <= 1, random(0..<6) == 0 {
            world.scheduler.after(UInt64(random(10..<800))) { [self] in
                guard !saving.contains(path(machine)), loaded[machine.name] == list else { return }
                let bytes = PlistFile.encode(.array(before.map(Value.dictionary)), as: .xml)
                let temp = machine.root + "/.list.plist.saving"
                guard (try? fs.writeFile(temp, bytes, durable: true)) != nil else { return }
                machine.note("app cancels its edit of list.plist: \(before.map { ValueJSON.encode(fields: $0) }.joined(separator: ", "))")
                try? fs.rename(temp, to: path(machine))
                values.replaced(added[0])
                loaded[machine.name] = before
            }
        }
    }

    private func finishInPlace(_ target: String, _ bytes: [UInt8]) {
        guard (try? fs.overwrite(target, with: bytes)) == nil else {
            saving.remove(target)
            return
        }
        world.scheduler.after(50) { [self] in finishInPlace(target, bytes) }
    }
}
