import Foundation
import PlistSyncTesting
@testable import AgentKit
import PlistFormat
import SyncCore
import ServerKit
import SyncProtocol
import XCTest

/// Moments the random runs reach only by luck, scripted on the same simulated machines, file
/// system and server (issue 18): each fails without its fix.
final class ScenarioTests: XCTestCase {
    private var folder: String!
    private var world: SimulationWorld!

    override func setUpWithError() throws {
        ServerLog.quiet = true
        // The server's errors are the faults the run injects (a full disk, a stalled store).
        ServerLog.output = { _ in }
        folder = Simulation.scratchFolder + "/scenario-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        world = try SimulationWorld(seed: 1, machineCount: 2, sameDevice: false, folder: folder)
        world.maxLatency = 2
    }

    override func tearDown() {
        ServerLog.quiet = false
        ServerLog.output = { line in FileHandle.standardError.write(Data(line.utf8)) }
        world.close()
        try? FileManager.default.removeItem(atPath: folder)
    }

    private var a: SimulatedMachine { world.machines[0] }
    private var b: SimulatedMachine { world.machines[1] }
    private var fs: SimulatedFileSystem { world.fileSystem }

    private func listPath(_ machine: SimulatedMachine) -> String { machine.root + "/list.plist" }

    /// How the apps' list file is written: an XML array (default), or a keyed archive.
    private var kind = CollectionFile.Kind.plist(.xml)

    private func encoded(_ rows: [[String: Value]]) -> [UInt8] {
        CollectionFile.encode(rows.map { CollectionFile.Entry(id: "", fields: $0) }, idKey: nil, as: kind)
    }

    private func saveList(_ machine: SimulatedMachine, _ rows: [[String: Value]]) throws {
        let temp = machine.root + "/.list.saving"
        try fs.writeFile(temp, encoded(rows), durable: true)
        try fs.rename(temp, to: listPath(machine))
    }

    private func list(_ machine: SimulatedMachine) -> [[String: Value]]? {
        guard let bytes = fs.contents(at: listPath(machine)), let read = try? CollectionFile.entries(bytes, idKey: "id", newID: { "" }) else { return nil }
        return read.entries.map(\.fields)
    }

    /// Both machines mirror `list.plist` (collection `a`), A's app having saved `rows` first.
    private func startWithList(_ rows: [[String: Value]]) throws {
        try fs.makeFolder(a.root)
        try saveList(a, rows)
        for machine in [a, b] {
            machine.attachedFiles = [AttachedFile(name: "list.plist", collection: "a", idKey: "id", kind: kind)]
            try machine.start()
        }
        XCTAssertTrue(world.run(within: 10_000) { list(b) == rows }, "first sync: \(String(describing: list(b)))")
        // Both agents settle (A's first read of its order is answered) before anyone edits.
        world.scheduler.run(until: world.scheduler.now + 1_000)
    }

    /// Issue 18 item 3: a change from elsewhere arrives just as the app saves an edit of
    /// another row from a load made before it: the save is read, and the file then shows the
    /// change too (it showed it only after some later change from the server). `inPlace`: the
    /// app truncates the file, writes half, and the rest 50 ms later.
    private func changeArrivesWhileTheAppSaves(inPlace: Bool) throws {
        let rows: [[String: Value]] = [["id": .string("r1"), "v": .string("one")], ["id": .string("r2"), "v": .string("two")]]
        try startWithList(rows)
        var fromB = rows
        fromB[0]["v"] = .string("one from B")
        var fromA = rows
        fromA[1]["v"] = .string("two from A")
        var saved = false
        world.beforeArrival = { [self] machine, lines in
            guard machine === a, !saved, lines.contains(where: { String(decoding: $0, as: UTF8.self).contains("one from B") }) else { return }
            saved = true
            guard inPlace else { return try! saveList(a, fromA) }
            let bytes = encoded(fromA)
            try! fs.overwrite(listPath(a), with: Array(bytes.prefix(bytes.count / 2)))
            world.scheduler.after(50) { [self] in try! fs.overwrite(listPath(a), with: bytes) }
        }
        try saveList(b, fromB)
        let expected = [fromB[0], fromA[1]]
        XCTAssertTrue(world.run(within: 10_000) { list(a) == expected && list(b) == expected },
                      "A \(String(describing: list(a)))\nB \(String(describing: list(b)))\n" + a.log.joined(separator: "\n"))
        XCTAssertTrue(saved, "the save was made as the change arrived")
    }

    func testAChangeArrivingWhileTheAppSavesStillReachesTheAppFile() throws {
        try changeArrivesWhileTheAppSaves(inPlace: false)
    }

    func testAChangeArrivingWhileTheAppSavesInPlaceStillReachesTheAppFile() throws {
        try changeArrivesWhileTheAppSaves(inPlace: true)
    }

    /// Issue 18 item 1: an app that loaded the file before a row was moved elsewhere saves its
    /// old load with one field edited: the field goes through, the move stays (both files went
    /// back to the old order).
    private func staleSaveKeepsAMove() throws {
        let rows: [[String: Value]] = ["r1", "r2", "r3"].map { ["id": .string($0), "v": .string($0)] }
        try startWithList(rows)
        let moved = [rows[2], rows[0], rows[1]]
        try saveList(a, moved)
        XCTAssertTrue(world.run(within: 10_000) { list(b) == moved }, "the move reaches B: \(String(describing: list(b)))")
        var stale = rows
        stale[1]["v"] = .string("edited on B")
        try saveList(b, stale)
        let expected = [rows[2], rows[0], stale[1]]
        XCTAssertTrue(world.run(within: 10_000) { list(a) == expected && list(b) == expected },
                      "A \(String(describing: list(a)))\nB \(String(describing: list(b)))\n" + b.log.joined(separator: "\n"))
    }

    func testAStaleSaveOfAnXMLArrayKeepsAMoveMadeElsewhere() throws {
        try staleSaveKeepsAMove()
    }

    func testAStaleSaveOfAKeyedArchiveUnderARootKeyKeepsAMoveMadeElsewhere() throws {
        kind = .archive(KeyedArchive.Shape(topKey: "Presidents"))
        try staleSaveKeepsAMove()
    }

    func testAStaleSaveOfAnArchiveOfCustomObjectsKeepsAMoveMadeElsewhere() throws {
        kind = .archive(KeyedArchive.Shape(elementClasses: ["BNRItem", "NSObject"]))
        try staleSaveKeepsAMove()
    }

    /// Issue 30: two apps save the same binary list at once, A editing row 0, B editing row 2
    /// and dragging row 1 to the top: both files took the merged fields but lost B's move. A
    /// save that moved nothing never undoes another's move, whichever reaches the server first
    /// and wherever the other's change is when it is read (`moment`: when A's app saves).
    private func concurrentSavesKeepTheMove(_ moment: SaveMoment, archive: Bool = false) throws {
        kind = archive ? .archive(KeyedArchive.Shape(topKey: "Presidents")) : .plist(.binary)
        let rows: [[String: Value]] = ["r0", "r1", "r2"].map { ["id": .string($0), "v": .string($0)] }
        try startWithList(rows)
        var onA = rows
        onA[0]["v"] = .string("r0 from A")
        var onB = rows
        onB[2]["v"] = .string("r2 from B")
        onB = [onB[1], onB[0], onB[2]]
        var savedA = false
        switch moment {
        case .together:
            try saveList(a, onA)
            savedA = true
        case .bAsAsEditArrives:
            break
        case .asBsChangeArrives, .asBsMoveArrives:
            world.beforeArrival = { [self] machine, lines in
                let marker = moment == .asBsChangeArrives ? "r2 from B" : "MOVE"
                guard machine === a, !savedA, lines.contains(where: { String(decoding: $0, as: UTF8.self).contains(marker) || (marker == "MOVE" && String(decoding: $0, as: UTF8.self).contains("CHANGE a") && String(decoding: $0, as: UTF8.self).contains(" r1 ")) }) else { return }
                savedA = true
                try! saveList(a, onA)
            }
        }
        if moment == .bAsAsEditArrives {
            try saveList(a, onA)
            savedA = true
            var savedB = false
            world.beforeArrival = { [self] machine, lines in
                guard machine === b, !savedB, lines.contains(where: { String(decoding: $0, as: UTF8.self).contains("r0 from A") }) else { return }
                savedB = true
                try! saveList(b, onB)
            }
        } else {
            try saveList(b, onB)
        }
        let expected = [rows[1], onA[0], onB[2]]
        XCTAssertTrue(world.run(within: 10_000) { list(a) == expected && list(b) == expected },
                      "A \(String(describing: list(a)))\nB \(String(describing: list(b)))\n" + a.log.joined(separator: "\n") + "\n" + b.log.joined(separator: "\n"))
        XCTAssertTrue(savedA)
    }

    private enum SaveMoment {
        case together
        case asBsChangeArrives
        case asBsMoveArrives
        case bAsAsEditArrives
    }

    func testConcurrentSavesKeepTheMoveOfTheOneThatMoved() throws {
        try concurrentSavesKeepTheMove(.together)
    }

    func testASaveAsTheOthersEditArrivesKeepsItsMove() throws {
        try concurrentSavesKeepTheMove(.asBsChangeArrives)
    }

    func testASaveAsTheOthersMoveArrivesKeepsIt() throws {
        try concurrentSavesKeepTheMove(.asBsMoveArrives)
    }

    func testAMoveSavedAsTheOthersEditArrivesIsKept() throws {
        try concurrentSavesKeepTheMove(.bAsAsEditArrives)
    }

    func testConcurrentSavesOfAKeyedArchiveKeepTheMove() throws {
        for moment in [SaveMoment.together, .asBsChangeArrives, .asBsMoveArrives, .bAsAsEditArrives] {
            try tearDownAndSetUp()
            try concurrentSavesKeepTheMove(moment, archive: true)
        }
    }

    private func tearDownAndSetUp() throws {
        tearDown()
        try setUpWithError()
    }

    /// A move the app itself made and takes back (a cancelled drag) is an edit like any other.
    func testAnAppThatMovesARowBackIsFollowed() throws {
        let rows: [[String: Value]] = ["r1", "r2", "r3"].map { ["id": .string($0), "v": .string($0)] }
        try startWithList(rows)
        let moved = [rows[2], rows[0], rows[1]]
        try saveList(b, moved)
        XCTAssertTrue(world.run(within: 10_000) { list(a) == moved }, "the move reaches A: \(String(describing: list(a)))\n" + b.log.joined(separator: "\n"))
        try saveList(b, rows)
        XCTAssertTrue(world.run(within: 10_000) { list(a) == rows && list(b) == rows }, "the move back reaches A: \(String(describing: list(a)))")
    }

    /// Issue 18 item 5: on a file system that takes `Zoë` precomposed and decomposed for one name
    /// (macOS), B holds the twin that came first and reports the other instead of reading it from,
    /// or writing it over, the first one's file; once the first is deleted, the other's file is
    /// written.
    func testOnAFileSystemThatFoldsNamesOneTwinIsHeldAndTheOtherWaitsForItsName() throws {
        let composed = "Zo\u{00EB}"
        let decomposed = "Zoe\u{0308}"
        fs.normalisingRoots.insert(b.root + "/")
        func save(_ machine: SimulatedMachine, _ id: String, _ value: String) throws {
            try fs.makeFolder(machine.root + "/c")
            try fs.writeFile(machine.root + "/c/.saving", PlistFile.encode(.dictionary(["v": .string(value)]), as: .xml), durable: true)
            try fs.rename(machine.root + "/c/.saving", to: machine.root + "/c/" + id + ".plist")
        }
        func files(_ machine: SimulatedMachine) -> [[UInt8]: String] {
            var result: [[UInt8]: String] = [:]
            for name in fs.names(in: machine.root + "/c") ?? [] where name.hasSuffix(".plist") && !name.hasPrefix(".") {
                if case .dictionary(let fields)? = try? PlistFile.decode(fs.contents(at: machine.root + "/c/" + name) ?? []).0,
                   case .string(let value)? = fields["v"] { result[Array(name.utf8)] = value }
            }
            return result
        }
        let clashes = { [self] in b.core?.status.problems.values.filter { $0.hasPrefix(SyncEngine.nameClashProblem) }.count ?? 0 }
        try save(a, composed, "composed")
        try a.start()
        try b.start()
        XCTAssertTrue(world.run(within: 10_000) { files(b) == [Array((composed + ".plist").utf8): "composed"] }, "\(files(b))")
        try save(a, decomposed, "decomposed")
        XCTAssertTrue(world.run(within: 10_000) { clashes() == 1 }, b.log.joined(separator: "\n"))
        world.scheduler.run(until: world.scheduler.now + 2_000)
        XCTAssertEqual(files(b), [Array((composed + ".plist").utf8): "composed"], "the held twin's file is not written over")
        XCTAssertEqual(files(a).count, 2, "nothing went back up from B")
        fs.removeFile(a.root + "/c/" + composed + ".plist")
        XCTAssertTrue(world.run(within: 10_000) { files(b) == [Array((decomposed + ".plist").utf8): "decomposed"] && clashes() == 0 },
                      "\(files(b))\n" + b.log.joined(separator: "\n"))
        XCTAssertEqual(files(a), [Array((decomposed + ".plist").utf8): "decomposed"])
    }

    /// `count` record files `c/r<N>.plist` in the machine's folder, as an app saves them.
    private func writeRecords(_ count: Int, in machine: SimulatedMachine) throws {
        try fs.makeFolder(machine.root + "/c")
        for index in 0..<count {
            try fs.writeFile(machine.root + "/c/r\(index).plist", PlistFile.encode(.dictionary(["v": .integer(Int64(index))]), as: .xml), durable: true)
        }
    }

    /// Issue 20 item 5: an empty folder's first sync reads each file it wrote once, when its
    /// file event comes (before: three times each: the write opened the missing file, its guard
    /// opened it again before the rename, and the scan after the replay read every file again).
    func testAFirstSyncReadsEachFileItWroteOnce() throws {
        let count = 600
        try writeRecords(count, in: a)
        try a.start()
        XCTAssertTrue(world.run(within: 60_000) { a.core?.state.records["c"]?.values.filter { $0.rev > 0 }.count == count }, "A pushed its records")
        world.scheduler.run(until: world.scheduler.now + 2_000)
        try b.start()
        let written = { [self] in (fs.names(in: b.root + "/c") ?? []).filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") }.count }
        XCTAssertTrue(world.run(within: 60_000) { written() == count }, "B's first sync: \(written()) of \(count)")
        world.scheduler.run(until: world.scheduler.now + 2_000)
        let recordReads = fs.readCounts.filter { $0.key.hasPrefix(b.root + "/c/r") }.values.reduce(0, +)
        XCTAssertLessThanOrEqual(recordReads, count + count / 10, "B read the \(count) record files it wrote \(recordReads) times")
    }

    /// Issue 32, item 2: the agent's status file and a person's answer to a held mass delete go
    /// through the file system the agent is given, so the simulation reaches them (the request
    /// was read with FileManager, on the real disk, where this run never wrote it).
    func testAHeldMassDeleteIsShownInStatusAndConfirmedThroughTheFileSystem() throws {
        let count = 110
        try writeRecords(count, in: a)
        try a.start()
        try b.start()
        let records = { [self] (machine: SimulatedMachine) in (fs.names(in: machine.root + "/c") ?? []).filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") }.count }
        XCTAssertTrue(world.run(within: 60_000) { records(b) == count }, "B's first sync: \(records(b))")
        for index in 0..<count { fs.removeFile(a.root + "/c/r\(index).plist") }
        let status = { [self] in String(decoding: fs.contents(at: a.root + "/.plistsync/status.json") ?? [], as: UTF8.self) }
        XCTAssertTrue(world.run(within: 10_000) { status().contains("\(count) files deleted at once are held") }, "A's status: \(status())")
        XCTAssertEqual(records(b), count, "nothing deleted on the server before it is confirmed")
        try fs.makeFolder(a.root + "/.plistsync/deletes")
        try fs.writeFile(a.root + "/.plistsync/deletes/c.confirm", [], durable: true)
        XCTAssertTrue(world.run(within: 10_000) { records(b) == 0 }, "confirmed: B has \(records(b)) files left")
        XCTAssertEqual(fs.kind(at: a.root + "/.plistsync/deletes/c.confirm"), .missing, "the request is taken away once carried out")
    }

    /// Issue 30, agent at 100k: every change from the server marked the collection's order
    /// file for a rewrite, which sorts every record (58–77 ms of the agent's loop at 100k, which
    /// the next change or save waited for). An edit of fields does not touch the order: the
    /// order file is not looked at for it; a move still rewrites it.
    func testAnEditFromElsewhereLeavesTheOrderFileAloneAndAMoveRewritesIt() throws {
        try fs.makeFolder(b.root + "/c")
        try writeRecords(5, in: a)
        try a.start()
        try b.start()
        let synced = { [self] in (fs.names(in: b.root + "/c") ?? []).filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") }.count == 5 }
        XCTAssertTrue(world.run(within: 10_000) { synced() }, "B's first sync")
        world.scheduler.run(until: world.scheduler.now + 2_000)
        let orderFile = b.root + "/c.order.plist"
        XCTAssertNotNil(fs.contents(at: orderFile), "B wrote the order file")
        let readsBefore = fs.readCounts[orderFile] ?? 0
        try fs.writeFile(a.root + "/c/r2.plist", PlistFile.encode(.dictionary(["v": .string("edited on A")]), as: .xml), durable: true)
        let edited = { [self] in fs.contents(at: b.root + "/c/r2.plist").flatMap { try? PlistFile.decodeRecord($0).0 } == ["v": .string("edited on A")] }
        XCTAssertTrue(world.run(within: 10_000) { edited() }, "the edit reaches B")
        world.scheduler.run(until: world.scheduler.now + 2_000)
        XCTAssertEqual(fs.readCounts[orderFile] ?? 0, readsBefore, "an edit of fields left B's order file alone")
        // A move on A: B's order file follows.
        let orderOnA = a.root + "/c.order.plist"
        try fs.writeFile(orderOnA, PlistFile.encode(.array(["r4", "r0", "r1", "r2", "r3"].map(Value.string)), as: .xml), durable: true)
        let moved = { [self] in fs.contents(at: orderFile).flatMap { try? PlistFile.decode($0).0 } == .array(["r4", "r0", "r1", "r2", "r3"].map(Value.string)) }
        XCTAssertTrue(world.run(within: 10_000) { moved() }, "the move reaches B's order file")
    }

    /// Issue 46 (simulation seed 322 of that day): B drags a row while A edits that row's
    /// fields, and A's edit reaches the server first. B's MOVE, sent from the row's old
    /// revision, was refused (CONFLICT) and never sent again: the drag was lost on every
    /// machine. It is sent again from the new revision.
    func testADragOfARowEditedElsewhereMeanwhileIsKept() throws {
        try fs.makeFolder(b.root + "/c")
        try writeRecords(3, in: a)
        try a.start()
        try b.start()
        let orderOnB = b.root + "/c.order.plist"
        let order = { [self] (machine: SimulatedMachine) in fs.contents(at: machine.root + "/c.order.plist").flatMap { try? PlistFile.decode($0).0 } }
        XCTAssertTrue(world.run(within: 10_000) { order(b) == .array(["r0", "r1", "r2"].map(Value.string)) }, "B's first sync")
        world.scheduler.run(until: world.scheduler.now + 2_000)
        // B's network turns slow: its MOVE reaches the server after A's edit of the same row.
        b.slowUntil = world.scheduler.now + 5_000
        try fs.writeFile(orderOnB, PlistFile.encode(.array(["r2", "r0", "r1"].map(Value.string)), as: .xml), durable: true)
        try fs.writeFile(a.root + "/c/r2.plist", PlistFile.encode(.dictionary(["v": .string("edited on A")]), as: .xml), durable: true)
        let dragged: Value = .array(["r2", "r0", "r1"].map(Value.string))
        XCTAssertTrue(world.run(within: 20_000) { order(a) == dragged && order(b) == dragged },
                      "A \(String(describing: order(a))), B \(String(describing: order(b)))\n" + b.log.suffix(30).joined(separator: "\n"))
        XCTAssertTrue(b.log.contains { $0.contains("cannot move c/r2: CONFLICT") }, "the MOVE met A's edit")
    }

    /// Seed 2670 (CI of 46a278c), the first run of the seeded runs on the server's own disk-full
    /// path: a folder made while the server's disk was full got NO_SPACE for its CREATE, and the
    /// agent never asked again, so the collection and its records never reached the server.
    func testAFolderMadeWhileTheServersDiskIsFullBecomesACollectionOnceThereIsRoom() throws {
        world.server.faults.diskFull = true
        try writeRecords(2, in: a)
        try a.start()
        XCTAssertTrue(world.run(within: 5_000) { a.log.contains { $0.contains("cannot create collection c for now: NO_SPACE") } },
                      a.log.suffix(10).joined(separator: "\n"))
        world.server.faults.diskFull = false
        let stored = { [self] in (try? world.server.storedFields()) ?? [] }
        XCTAssertTrue(world.run(within: 20_000) { stored().sorted() == [#"{"v":0}"#, #"{"v":1}"#] },
                      "the server holds \(stored())\n" + a.log.suffix(10).joined(separator: "\n"))
    }

    /// Seed 4413 (issue 46, with failing commits): an app adds a row whose create the server
    /// refuses for now, drags another row while that create waits for its retry, then removes
    /// the new row again: the drag must still reach the server.
    func testADragSavedWhileANewRowsCreateWaitsForItsRetryIsKeptWhenTheRowGoesAgain() throws {
        let rows: [[String: Value]] = ["Alan", "Zoe"].map { ["id": .string($0), "x": .string($0)] }
        let edsger: [String: Value] = ["id": .string("Edsger"), "x": .string("new")]
        // Edsger was there once and was deleted: its create is a PUT over a tombstone.
        try startWithList(rows + [edsger])
        try saveList(b, rows)
        XCTAssertTrue(world.run(within: 5_000) { list(a) == rows })
        world.scheduler.run(until: world.scheduler.now + 1_000)
        world.server.faults.commitsFail = true
        try saveList(b, rows + [edsger])
        XCTAssertTrue(world.run(within: 5_000) { b.log.contains { $0.contains("server refused a/Edsger for now: INTERNAL") } }, b.log.suffix(10).joined(separator: "\n"))
        try saveList(b, [rows[1], edsger, rows[0]])
        world.scheduler.run(until: world.scheduler.now + 300)
        try saveList(b, [rows[1], rows[0]])
        world.scheduler.run(until: world.scheduler.now + 300)
        world.server.faults.commitsFail = false
        let dragged = [rows[1], rows[0]]
        XCTAssertTrue(world.run(within: 20_000) { list(a) == dragged && list(b) == dragged },
                      "A \(String(describing: list(a))), B \(String(describing: list(b)))\n" + b.log.suffix(20).joined(separator: "\n"))
    }
}
