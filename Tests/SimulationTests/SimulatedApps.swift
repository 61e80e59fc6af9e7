import Foundation
import PlistSyncTesting
@testable import AgentKit
import PlistFormat
import SyncCore
import SyncProtocol

/// People and their apps editing the mirror folders the way real ones do, each typing values
/// that are unique in the run, so the checks can tell whether any was lost. A value counts as
/// replaced on purpose (not lost) when the one who replaced it had it in front of them: an
/// edit of the field it was in, or a delete of the file that showed it.
final class SimulatedApps {
    private let world: SimulationWorld
    let values: TypedValues
    /// Record ids the apps choose from (few, so that machines collide on them); two differ
    /// only in Unicode normalisation (two files, two records).
    static let ids = ["Ada", "Grace", "Alan", "Zo\u{00EB}", "Zoe\u{0308}", "Edsger"]
    static let fieldNames = ["name", "phone", "note"]
    let collection = "c"

    init(world: SimulationWorld, values: TypedValues) {
        self.world = world
        self.values = values
    }

    private var fs: SimulatedFileSystem { world.fileSystem }

    /// A value typed into a field: usually text, sometimes a number, a date or data (each unique
    /// in the run), so a loss in how any kind is read, written or sent fails the run.
    private func newValue(_ machine: SimulatedMachine, _ id: String, _ field: String) -> Value {
        values.newValue(kind: TypedValues.Kind.mix.randomElement(using: &world.scheduler.random)!,
                        "\(machine.name) \(collection)/\(id).\(field) at \(world.scheduler.now) ms")
    }

    /// How an app writes a record: XML mostly, sometimes a binary plist.
    private func format() -> PlistFile.Format {
        Int.random(in: 0..<4, using: &world.scheduler.random) == 0 ? .binary : .xml
    }

    private func folder(_ machine: SimulatedMachine) -> String { machine.root + "/" + collection }
    private func untype(_ fields: [String: Value]) {
        for value in fields.values { values.unsaved(value) }
    }

    private func path(_ machine: SimulatedMachine, _ id: String) -> String { folder(machine) + "/" + id + ".plist" }

    private func records(_ machine: SimulatedMachine) -> [String] {
        (fs.names(in: folder(machine)) ?? []).filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") && !$0.contains(".sync-conflict-") }
            .map { String($0.dropLast(6)) }
    }

    private func read(_ path: String) -> [String: Value]? {
        guard let bytes = fs.contents(at: path), case .dictionary(let fields)? = try? PlistFile.decode(bytes).0 else { return nil }
        return fields
    }

    /// An atomic save: a temp file, then a rename over the record.
    @discardableResult
    private func save(_ fields: [String: Value], to path: String, by machine: SimulatedMachine) -> Bool {
        machine.note("app saves \(path): \(ValueJSON.encode(fields: fields))")
        let temp = path + ".tmp~"
        let bytes = PlistFile.encode(.dictionary(fields), as: format())
        guard (try? fs.writeFile(temp, bytes, durable: true)) != nil else {
            machine.note("app could not save: disk full")
            return false
        }
        try? fs.rename(temp, to: path)
        return true
    }

    /// vim's save (`backupcopy=no`): the file is renamed away to a backup, the new one written
    /// in its place, the backup removed; when the write fails the backup goes back.
    @discardableResult
    private func saveRenamingAway(_ fields: [String: Value], to path: String, by machine: SimulatedMachine) -> Bool {
        machine.note("app saves \(path) the vim way: \(ValueJSON.encode(fields: fields))")
        let backup = path + "~"
        guard (try? fs.rename(path, to: backup)) != nil else { return false }
        guard (try? fs.writeFile(path, PlistFile.encode(.dictionary(fields), as: format()), durable: true)) != nil else {
            fs.removeFile(path)
            try? fs.rename(backup, to: path)
            machine.note("app could not save: disk full")
            return false
        }
        world.scheduler.after(UInt64.random(in: 0...5, using: &world.scheduler.random)) { [self] in fs.removeFile(backup) }
        return true
    }

    /// The person changes their mind a moment after saving an edit and puts the field back,
    /// unless the file changed meanwhile (then they look at what came in instead).
    private func cancelLater(_ id: String, _ field: String, from value: Value, back old: Value?, on machine: SimulatedMachine) {
        world.scheduler.after(UInt64.random(in: 10...800, using: &world.scheduler.random)) { [self] in
            let target = path(machine, id)
            guard !saving.contains(RecordID(target)), var fields = read(target), fields[field] == value else { return }
            fields[field] = old
            machine.note("app cancels the edit of \(target)")
            if save(fields, to: target, by: machine) { values.replaced(value) }
        }
    }

    /// Files an in-place save is still being written to (an app saves a file once at a time).
    private var saving: Set<RecordID> = []

    /// The second half of an in-place save; on a full disk the person saves again a bit later.
    private func finishInPlace(_ target: String, _ bytes: [UInt8]) {
        guard (try? fs.overwrite(target, with: bytes)) == nil else {
            saving.remove(RecordID(target))
            values.saveEnded(target)
            return
        }
        world.scheduler.after(50) { [self] in finishInPlace(target, bytes) }
    }

    /// One random action of one person on `machine`'s folder.
    func act(on machine: SimulatedMachine) {
        guard fs.isFolder(folder(machine)) else { return }
        let present = records(machine)
        let roll = Int.random(in: 0..<100, using: &world.scheduler.random)
        if present.isEmpty || roll < 20 {
            // A new record (maybe one another machine is creating too).
            let id = Self.ids.randomElement(using: &world.scheduler.random)!
            guard fs.kind(at: path(machine, id)) == .missing else { return }
            var fields: [String: Value] = [:]
            for field in Self.fieldNames.prefix(2) { fields[field] = newValue(machine, id, field) }
            if !save(fields, to: path(machine, id), by: machine) { untype(fields) }
        } else if roll < 75 {
            // An edit of one field, saved atomically or in place in two writes.
            let id = present.randomElement(using: &world.scheduler.random)!
            guard !saving.contains(RecordID(path(machine, id))), var fields = read(path(machine, id)) else { return }
            let field = Self.fieldNames.randomElement(using: &world.scheduler.random)!
            let old = fields[field]
            let value = newValue(machine, id, field)
            fields[field] = value
            // Saved: the old value was replaced by someone who saw it. Not saved: the person was
            // told, and the new value does not count as typed.
            let outcome = { [self] (saved: Bool) in
                if saved, let old { values.replaced(old) }
                if !saved { values.unsaved(value) }
            }
            let style = Int.random(in: 0..<8, using: &world.scheduler.random)
            if style < 2 {
                let bytes = PlistFile.encode(.dictionary(fields), as: format())
                let target = path(machine, id)
                machine.note("app writes \(target) in place: \(ValueJSON.encode(fields: fields))")
                let started = (try? fs.overwrite(target, with: Array(bytes.prefix(bytes.count / 2)))) != nil
                outcome(started)
                guard started else { return machine.note("app could not save: disk full") }
                saving.insert(RecordID(target))
                values.saveStarted(target, bytes)
                world.scheduler.after(UInt64.random(in: 1...60, using: &world.scheduler.random)) { [self] in finishInPlace(target, bytes) }
            } else if style == 2 {
                outcome(saveRenamingAway(fields, to: path(machine, id), by: machine))
            } else {
                let saved = save(fields, to: path(machine, id), by: machine)
                outcome(saved)
                if saved, style == 3 { cancelLater(id, field, from: value, back: old, on: machine) }
            }
        } else if roll < 88 {
            // A delete of a file the person looked at.
            let id = present.randomElement(using: &world.scheduler.random)!
            guard !saving.contains(RecordID(path(machine, id))) else { return }
            if let fields = read(path(machine, id)) {
                for value in fields.values { values.replaced(value) }
            }
            machine.note("app deletes \(path(machine, id))")
            fs.removeFile(path(machine, id))
        } else {
            // A row dragged elsewhere in the order file.
            let orderPath = machine.root + "/" + collection + ".order.plist"
            guard let bytes = fs.contents(at: orderPath), case .array(var rows)? = try? PlistFile.decode(bytes).0, rows.count > 1 else { return }
            let row = rows.remove(at: Int.random(in: 0..<rows.count, using: &world.scheduler.random))
            rows.insert(row, at: Int.random(in: 0...rows.count, using: &world.scheduler.random))
            let temp = orderPath + ".tmp~"
            guard (try? fs.writeFile(temp, PlistFile.encode(.array(rows), as: .xml), durable: true)) != nil else { return }
            machine.note("app saves \(orderPath): \(rows)")
            try? fs.rename(temp, to: orderPath)
        }
    }
}
