import Foundation
import PlistSyncTesting
@testable import AgentKit
import PlistFormat
import SyncCore
import SyncProtocol

/// One seeded run: machines mirroring one collection through the real server while people
/// edit, delete and reorder, agents crash and restart, connections drop and disks fill up;
/// then a quiet period, and the checks: every mirror equals the server (records, order,
/// conflict copies), every value anyone typed still exists somewhere unless the one who
/// replaced it saw it, and (in runs without faults) every row dragged in a list app is still
/// where it was put unless someone had reason to change that (`OrderIntents`).
final class Simulation {
    let seed: UInt64
    /// Virtual milliseconds of activity, then of quiet before the checks.
    var activeMilliseconds: UInt64 = 20_000
    var quietMilliseconds: UInt64 = 60_000

    init(seed: UInt64) {
        self.seed = seed
    }

    static let busyEvents = 50_000

    /// What a run found.
    struct Report {
        var violations: [String] = []
        var events = 0
        /// The run's fault mix, for the failure report.
        var faults = ""
        var logs: [String: [String]] = [:]
    }

    func run() throws -> Report {
        let folder = Self.scratchFolder + "/sim-\(seed)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var random = SeededRandom(seed: seed)
        let world = try SimulationWorld(seed: random.next(), machineCount: Int.random(in: 2...3, using: &random), sameDevice: random.chance(30),
                                        folder: folder)
        defer { world.close() }
        world.maxLatency = [1, 5, 40].randomElement(using: &random)!
        // Some runs have a machine whose file system takes names that differ only in Unicode
        // normalisation for one file (as macOS does): it holds one of two twin records.
        let folding = random.chance(25) ? world.machines.last : nil
        if let folding { world.fileSystem.normalisingRoots.insert(folding.root + "/") }
        let values = TypedValues()
        let apps = SimulatedApps(world: world, values: values)
        let faults = FaultMix(random: &random)
        // Some runs take a backup of the server early and restore it later (the edits made in
        // between are in the mirrors only, and come back from them).
        if faults.backupAndRestore {
            let backupAt = UInt64.random(in: 1_000...(activeMilliseconds / 2), using: &random)
            let restoreAt = UInt64.random(in: (backupAt + 500)...activeMilliseconds, using: &random)
            var backup: String?
            world.scheduler.after(backupAt) { backup = try? world.server.backUp() }
            world.scheduler.after(restoreAt) {
                guard let backup else { return }
                do {
                    try world.server.restore(from: backup)
                } catch {
                    world.fail("restore: \(error)")
                }
            }
        }
        // Some runs also mirror an app's whole-list file on every machine.
        let listApp = random.chance(50) ? SimulatedListApp(world: world, values: values) : nil
        if let listApp {
            for machine in world.machines { machine.attachedFiles = [SimulatedListApp.file] }
            try listApp.seed(world.machines[0])
        }

        // The first machine has the collection as a folder with a record; the others join.
        let first = world.machines[0]
        try world.fileSystem.makeFolder(first.root + "/" + apps.collection)
        apps.act(on: first)
        for machine in world.machines { try machine.start() }

        // Safety is checked throughout, not only once all is quiet: a value lost for a moment
        // and found again later (a file rewritten from a stale state, then merged back) is
        // still a moment in which a crash would have lost it.
        let checker = SafetyChecks(world: world, values: values)
        checker.watch()

        // People act every few hundred milliseconds; faults strike now and then.
        var time: UInt64 = 0
        while time < activeMilliseconds {
            time += UInt64.random(in: 10...400, using: &random)
            let machine = world.machines.randomElement(using: &random)!
            let roll = Int.random(in: 0..<100, using: &random)
            let pick = Int.random(in: 0..<1000, using: &random)
            world.scheduler.after(time - world.scheduler.now) { [self] in
                // Now and then the store writes the edits waiting for their rows (so runs
                // crash, back up and restore with rows lagging the log, and with none).
                if pick % 10 == 0 { world.server.writeRowsBehind() }
                switch faults.fault(roll: roll, pick: pick) {
                case nil:
                    if let listApp, pick % 100 < 40 { listApp.act(on: machine) } else { apps.act(on: machine) }
                case .agentCrash:
                    machine.crash()
                    world.scheduler.after(UInt64.random(in: 10...3000, using: &world.scheduler.random)) { try? machine.start() }
                case .linkDrop:
                    machine.link?.drop()
                case .diskFull:
                    fillDisk(world, machine)
                case .serverRestart:
                    do {
                        try world.server.crashAndRestart()
                    } catch {
                        world.fail("server restart: \(error)")
                    }
                case .storeStall:
                    // The store answers nothing for a while: past `--store-timeout` the server
                    // answers UNAVAILABLE; what it held commits when the store is back.
                    let faults = world.server.faults
                    faults.stalledUntil = max(faults.stalledUntil, world.scheduler.now + UInt64.random(in: 100...8000, using: &world.scheduler.random))
                case .serverDiskFull:
                    world.server.faults.diskFull = true
                    world.scheduler.after(UInt64.random(in: 100...8000, using: &world.scheduler.random)) { world.server.faults.diskFull = false }
                case .slowStore:
                    // Every commit and read takes longer for a while (a busy disk).
                    let faults = world.server.faults
                    faults.slowness = UInt64.random(in: 5...400, using: &world.scheduler.random)
                    world.scheduler.after(UInt64.random(in: 500...8000, using: &world.scheduler.random)) { faults.slowness = 0 }
                case .failingCommits:
                    // The store's commits fail for a while (an I/O error): the server answers
                    // INTERNAL and writes nothing of them.
                    world.server.faults.commitsFail = true
                    world.scheduler.after(UInt64.random(in: 50...3000, using: &world.scheduler.random)) { world.server.faults.commitsFail = false }
                case .slowDelivery:
                    machine.slowUntil = max(machine.slowUntil, world.scheduler.now + UInt64.random(in: 1_000...10_000, using: &world.scheduler.random))
                case .partition:
                    partition(world, machine)
                case .lateDelivery:
                    machine.link?.drop(late: true)
                case .repeatedChanges:
                    machine.link?.repeatOldChanges()
                case .clockJump:
                    let jump = [-3_600.0, -30, -1, 1, 30, 3_600].randomElement(using: &world.scheduler.random)!
                    machine.clockOffset += jump * Double.random(in: 0.5...1.5, using: &world.scheduler.random)
                    machine.note("the wall clock jumps to \(machine.clockOffset) s off")
                }
                _ = self
            }
        }
        world.scheduler.run(until: activeMilliseconds)
        // Quiet: every machine runs, every disk has room, and the agents catch up.
        world.fileSystem.fullDisks.removeAll()
        world.server.faults.diskFull = false
        world.server.faults.stalledUntil = 0
        world.server.faults.slowness = 0
        world.server.faults.commitsFail = false
        for machine in world.machines {
            (machine.slowUntil, machine.partitionedUntil) = (0, 0)
            if !machine.isRunning { try machine.start() }
        }
        world.scheduler.run(until: activeMilliseconds + quietMilliseconds)

        var report = Report(events: world.scheduler.eventsRun, faults: faults.description)
        if let failure = world.failure { report.violations.append(failure) }
        // A few thousand events make a run; far more is a loop (a push refused and retried at once).
        if report.events > Self.busyEvents { report.violations.append("\(report.events) events: something loops") }
        report.violations += try check(world, apps, checker, folding: folding)
        if let listApp { report.violations += try check(world, listApp, folding: folding, faults: faults.hasFaults) }
        for machine in world.machines { report.logs[machine.name] = machine.log }
        return report
    }

    private func fillDisk(_ world: SimulationWorld, _ machine: SimulatedMachine) {
        world.fileSystem.fullDisks.insert(machine.root + "/")
        world.scheduler.after(UInt64.random(in: 100...5000, using: &world.scheduler.random)) {
            world.fileSystem.fullDisks.remove(machine.root + "/")
        }
    }

    /// How long a partition lasts before the agent gives up on its connection (the keepalive's
    /// three missed answers, shortened).
    static let partitionNoticedMilliseconds: UInt64 = 5_000

    /// The network between `machine` and the server is cut for half a second to 15 s: what is
    /// sent waits for the network to heal; a long cut also ends the connection, and connecting
    /// fails until it heals.
    private func partition(_ world: SimulationWorld, _ machine: SimulatedMachine) {
        let length = UInt64.random(in: 500...15_000, using: &world.scheduler.random)
        machine.partitionedUntil = max(machine.partitionedUntil, world.scheduler.now + length)
        machine.note("the network is cut for \(length) ms")
        guard length > Self.partitionNoticedMilliseconds else { return }
        world.scheduler.after(Self.partitionNoticedMilliseconds) {
            guard world.scheduler.now < machine.partitionedUntil else { return }
            machine.link?.drop()
        }
    }

    // MARK: - Checks

    private func check(_ world: SimulationWorld, _ apps: SimulatedApps, _ checker: SafetyChecks, folding: SimulatedMachine?) throws -> [String] {
        var violations: [String] = []
        let collection = apps.collection
        let allOnServer = try serverState(world, collection)
        let allCopies = try serverState(world, Names.conflictsCollection(of: collection))
        for machine in world.machines {
            guard machine.link?.isReady == true else {
                violations.append("\(machine.name) is not connected at the end")
                continue
            }
            var server = allOnServer
            var copies = allCopies
            if machine === folding {
                // Of twin ids, the machine holds the one it got first, and reports the other.
                let folder = machine.root + "/" + collection
                let dropped = Self.twinsNotHeld(server.records, world.fileSystem, folder) + Self.twinsNotHeld(copies.records, world.fileSystem, folder)
                for id in dropped {
                    server.records[id] = nil
                    copies.records[id] = nil
                }
                server.order.removeAll { dropped.contains($0) }
                let problems = machine.core?.status.problems.values.filter { $0.hasPrefix(SyncEngine.nameClashProblem) } ?? []
                if problems.count < Set(dropped.map(\.string)).count {
                    violations.append("\(machine.name): \(dropped) not held (a folding file system), \(problems.count) reported")
                }
            }
            let folder = machine.root + "/" + collection
            var records: [RecordID: Fields] = [:]
            var copyNames: Set<RecordID> = []
            for name in world.fileSystem.names(in: folder) ?? [] where name.hasSuffix(".plist") && !name.hasPrefix(".") {
                let id = RecordID(String(name.dropLast(6)))
                if name.contains(".sync-conflict-") {
                    copyNames.insert(id)
                    continue
                }
                guard let bytes = world.fileSystem.contents(at: folder + "/" + name), let fields = try? PlistFile.decodeRecord(bytes).0 else {
                    violations.append("\(machine.name): \(collection)/\(name) does not parse")
                    continue
                }
                records[id] = fields
            }
            for id in Set(records.keys).union(server.records.keys).sorted() where records[id] != server.records[id] {
                violations.append("\(machine.name): \(collection)/\(id) is \(describe(records[id])), the server has \(describe(server.records[id]))")
            }
            for name in copyNames where name.string.components(separatedBy: ".sync-conflict-").count > 2 {
                violations.append("\(machine.name): a conflict copy of a conflict copy: \(name)")
            }
            if copyNames != Set(copies.records.keys) {
                violations.append("\(machine.name): conflict copies \(copyNames.sorted()), the server has \(copies.records.keys.sorted())")
            }
            let orderPath = machine.root + "/" + collection + ".order.plist"
            var order: [RecordID] = []
            if let bytes = world.fileSystem.contents(at: orderPath), case .array(let rows)? = try? PlistFile.decode(bytes).0 {
                order = rows.compactMap { if case .string(let id) = $0 { RecordID(id) } else { nil } }
            }
            if order != server.order { violations.append("\(machine.name): order \(order), the server has \(server.order)") }
        }
        // Every value typed is where a person finds it, unless the one who replaced it saw it.
        violations += try checker.lostValues().map { "lost \($0.value), typed on \($0.place)" }
        return violations
    }

    /// Every machine's list file holds the server's records of its collection, in order; in a
    /// run without faults, every row a person dragged is still where they put it unless
    /// someone had reason to change that (`OrderIntents`).
    private func check(_ world: SimulationWorld, _ listApp: SimulatedListApp, folding: SimulatedMachine?, faults: Bool) throws -> [String] {
        let server = try serverState(world, SimulatedListApp.file.collection)
        var violations: [String] = []
        if !faults {
            // A folding file system holds one of two twin rows: their places are not checked.
            let twin = { (id: RecordID) in SimulatedApps.ids.map { RecordID($0) }.contains { $0 != id && $0.foldsTogether(with: id) } }
            for move in listApp.intents.broken(by: server.order, skipping: { folding != nil && twin($0) }) {
                violations.append("\(move.machine) moved \(move.row) after \(move.before?.string ?? "nothing") and ahead of \(move.after?.string ?? "nothing") at \(move.time) ms; the server's order is \(server.order)")
            }
        }
        for machine in world.machines {
            guard let rows = listApp.rows(machine) else {
                // An empty collection need not make the file where the app never saved one.
                let absent = world.fileSystem.kind(at: machine.root + "/" + SimulatedListApp.file.name) == .missing
                if !(absent && server.order.isEmpty) { violations.append("\(machine.name): list.plist is missing or does not parse") }
                continue
            }
            var order = server.order
            if machine === folding {
                // The shadow folder holds one of two twin rows.
                let shown = Set(rows.compactMap { if case .string(let id)? = $0["id"] { RecordID(id) } else { nil } })
                order.removeAll { id in !shown.contains(id) && server.order.contains { $0.foldsTogether(with: id) } }
            }
            let expected = order.map { server.records[$0]! }
            if rows != expected {
                violations.append("\(machine.name): list.plist is \(rows.map { ValueJSON.encode(fields: $0) }), the server has \(expected.map { ValueJSON.encode(fields: $0) })")
            }
        }
        return violations
    }

    /// Of each set of ids that differ only in normalisation, the ones whose exact name is not
    /// in `folder` (a folding file system holds one of them).
    private static func twinsNotHeld(_ records: [RecordID: Fields], _ fileSystem: SimulatedFileSystem, _ folder: String) -> [RecordID] {
        let held = Set((fileSystem.names(in: folder) ?? []).recordIDs)
        return Dictionary(grouping: records.keys, by: \.string).values.filter { $0.count > 1 }.flatMap { twins in
            twins.filter { !held.contains(RecordID($0.string + ".plist")) }
        }
    }

    private func describe(_ fields: Fields?) -> String {
        fields.map { ValueJSON.encode(fields: $0) } ?? "missing"
    }

    /// The tokens (`TypedValues.token(of:)`) of every value in `value`, nested ones included.
    static func collectTokens(_ value: Value, into set: inout Set<String>) {
        switch value {
        case .array(let items): for item in items { Self.collectTokens(item, into: &set) }
        case .dictionary(let members): for member in members.values { Self.collectTokens(member, into: &set) }
        default: if let token = TypedValues.token(of: value) { set.insert(token) }
        }
    }

    /// A collection's live records and order, read from the server through a session of its own.
    private func serverState(_ world: SimulationWorld, _ collection: String) throws -> (records: [RecordID: Fields], order: [RecordID]) {
        var lines: [[UInt8]] = []
        let connection = world.server.connect { lines += $0 }
        defer { connection.drop() }
        for (tag, command) in [("h", Command.hello(version: "1", clientName: "check")), ("a", .auth(user: "alice", password: "pw")),
                               ("l", .list(collection: collection))] {
            connection.send(tag + " " + command.requestText)
            // A login may wait for its turn (the pace of logins from one address).
            let answered = world.run(within: 10_000) { lines.contains { $0.starts(with: Array((tag + " OK").utf8)) || $0.starts(with: Array((tag + " ERR").utf8)) } }
            guard answered else { throw SimulationFailure("the server did not answer \(command.requestText) within 10 s") }
        }
        var records: [RecordID: Fields] = [:]
        var order: [RecordID] = []
        for bytes in lines {
            guard let line = ServerLine.parseAnsweringTag(bytes), case .record(_, let id, let state) = ServerEvent(line), let fields = state.fields else { continue }
            records[RecordID(id)] = fields
            order.append(RecordID(id))
        }
        return (records, order)
    }

    /// Where runs keep their SQLite files: memory-backed where the machine has it.
    static let scratchFolder: String = {
        let shm = "/dev/shm"
        return FileManager.default.isWritableFile(atPath: shm) ? shm + "/plistsync-simulation" : NSTemporaryDirectory() + "plistsync-simulation"
    }()
}
