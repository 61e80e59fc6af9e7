import Foundation
import PlistSyncTesting
@testable import AgentKit
import PlistFormat
import SyncCore
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
    /// Per machine, how many versions its file had had when the app's copy was loaded or saved.
    private var loadedVersion: [String: Int] = [:]
    /// Every drag a person made, for the order-intent check.
    let intents = OrderIntents()

    init(world: SimulationWorld, values: TypedValues) {
        self.world = world
        self.values = values
        for machine in world.machines { world.fileSystem.versionedPaths.insert(path(machine)) }
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
        if loaded[machine.name] == nil || fresh {
            loaded[machine.name] = rows(machine)
            loadedVersion[machine.name] = versionCount(machine)
        }
        guard var list = loaded[machine.name] else { return }
        let load = Self.ids(of: list)
        // A copy older than the versions the agent remembers: it cannot tell the save is stale,
        // and takes its whole order (as for a drag from that load).
        let beyondHistory = versionCount(machine) - (loadedVersion[machine.name] ?? 0) > AppFileHistory.length
        let place = "\(machine.name) a/"
        var replaced: [String] = []
        var added: [String] = []
        var uprooted: [RecordID] = []
        var move: OrderIntents.Move?
        if list.isEmpty || roll < 20 {
            let id = SimulatedApps.ids[random(0..<SimulatedApps.ids.count)]
            guard !list.contains(where: { $0["id"] == .string(id) }) else { return }
            let value = values.new(place + id + ".x at \(world.scheduler.now) ms")
            added.append(value)
            list.insert(["id": .string(id), "x": .string(value)], at: random(0..<(list.count + 1)))
            uprooted = [RecordID(id)]
            // From a stale load, an id the file has now: the agent takes the save's whole order
            // (as for a drag from that load), so it counts as a move for the order check.
            if rows(machine)?.contains(where: { $0["id"] == .string(id) }) == true {
                move = OrderIntents.Move(time: world.scheduler.now, machine: machine.name, row: RecordID(id), before: nil, after: nil, load: load,
                                         result: Self.ids(of: list), earlierOrders: [])
            }
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
            uprooted = Self.ids(of: [row])
        } else {
            guard list.count > 1 else { return }
            let row = list.remove(at: random(0..<list.count))
            let place = random(0..<(list.count + 1))
            list.insert(row, at: place)
            let ids = Self.ids(of: list)
            // A row dropped where it was is no move (from a stale load, a stale save).
            guard ids != load else { return }
            // A drag to an order the file held before looks the same as a save from a load made
            // back then: the agent takes it for the latter when it wrote a newer order since.
            let earlier = (fs.versions[path(machine)] ?? []).compactMap(Self.order(ofFile:))
            move = OrderIntents.Move(time: world.scheduler.now, machine: machine.name, row: ids[place], before: place > 0 ? ids[place - 1] : nil,
                                     after: place + 1 < ids.count ? ids[place + 1] : nil, load: load, result: ids, earlierOrders: earlier)
        }
        // Some apps write their list as a binary plist (the agent then writes it back so).
        let bytes = PlistFile.encode(.array(list.map(Value.dictionary)), as: random(0..<4) == 0 ? .binary : .xml)
        machine.note("app saves list.plist: \(list.map { ValueJSON.encode(fields: $0) }.joined(separator: ", "))")
        let saved: Bool
        if random(0..<4) == 0 {
            saved = (try? fs.overwrite(path(machine), with: Array(bytes.prefix(bytes.count / 2)))) != nil
            if saved {
                saving.insert(path(machine))
                values.saveStarted(path(machine), bytes)
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
        for row in uprooted { intents.uprooted(row, at: world.scheduler.now) }
        if let move {
            intents.moved(move)
        } else if beyondHistory {
            intents.moved(OrderIntents.Move(time: world.scheduler.now, machine: machine.name, row: load.first ?? "?", before: nil, after: nil,
                                            load: load, result: Self.ids(of: list), earlierOrders: []))
        }
        let before = loaded[machine.name]
        loaded[machine.name] = list
        loadedVersion[machine.name] = versionCount(machine)
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
                let kept = Set(Self.ids(of: before))
                for row in Self.ids(of: list) where !kept.contains(row) { intents.uprooted(row, at: world.scheduler.now) }
                loaded[machine.name] = before
            }
        }
    }

    private func versionCount(_ machine: SimulatedMachine) -> Int {
        fs.versions[path(machine)]?.count ?? 0
    }

    private static func order(ofFile bytes: [UInt8]) -> [RecordID]? {
        guard case .array(let items)? = try? PlistFile.decode(bytes).0 else { return nil }
        return ids(of: items.compactMap { if case .dictionary(let row) = $0 { row } else { nil } })
    }

    private static func ids(of rows: [[String: Value]]) -> [RecordID] {
        rows.compactMap { if case .string(let id)? = $0["id"] { RecordID(id) } else { nil } }
    }

    private func finishInPlace(_ target: String, _ bytes: [UInt8]) {
        guard (try? fs.overwrite(target, with: bytes)) == nil else {
            saving.remove(target)
            values.saveEnded(target)
            return
        }
        world.scheduler.after(50) { [self] in finishInPlace(target, bytes) }
    }
}
