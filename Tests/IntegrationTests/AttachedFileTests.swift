import Foundation
import XCTest

/// Issue 10, items 1–2: an app's whole-list file (a contacts array, an inventory archive)
/// mirrored by two agents; edits to different elements and fields on both sides both survive,
/// deletes and moves travel, and Foundation reads every file the agents write.
final class AttachedFileTests: TwoAgentTestCase {

    private func attach(_ agent: MirrorView, _ file: String, _ collection: String, idKey: String) throws {
        let (code, _, error) = PlistSyncCommand.run(["attach", file, "--collection", collection, "--id-key", idKey, "--dir", agent.directory])
        XCTAssertEqual(code, 0, error)
    }

    private func writeList(_ agent: MirrorView, _ file: String, _ list: [[String: Any]],
                           format: PropertyListSerialization.PropertyListFormat = .xml) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: list, format: format, options: 0)
        let temp = agent.directory + "/." + file + ".saving"
        try data.write(to: URL(fileURLWithPath: temp))
        XCTAssertEqual(rename(temp, agent.directory + "/" + file), 0)
    }

    private func readList(_ agent: MirrorView, _ file: String) -> NSArray? {
        guard let data = FileManager.default.contents(atPath: agent.directory + "/" + file) else { return nil }
        return (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)) as? NSArray
    }

    /// A writes `list` as `file`, both agents attach it and start, and B's file catches up.
    private func startBothAgents(on list: [[String: Any]], file: String = "contacts.plist", collection: String = "contacts",
                                 format: PropertyListSerialization.PropertyListFormat = .xml, seconds: Double = 10) throws {
        try writeList(a, file, list, format: format)
        try attach(a, file, collection, idKey: "name")
        try attach(b, file, collection, idKey: "name")
        try a.start()
        try b.start()
        eventually(seconds, "\(String(describing: readList(b, file)))\n\(b.log())") { readList(b, file) == list as NSArray }
    }

    func testAContactsArrayFileSyncsRecordByRecordBetweenTwoEditors() throws {
        var contacts: [[String: Any]] = [
            ["name": "Ada", "phone": "555-0100"], ["name": "Grace", "phone": "555-0142"], ["name": "Alan", "phone": "555-0199"],
        ]
        try startBothAgents(on: contacts)

        // Different elements and different fields of one element, saved on both sides at once.
        var onA = contacts
        onA[0]["phone"] = "555-1111"
        onA[1]["email"] = "grace@example.com"
        var onB = contacts
        onB[2]["phone"] = "555-2222"
        onB[1]["city"] = "Arlington"
        try writeList(a, "contacts.plist", onA)
        try writeList(b, "contacts.plist", onB)
        contacts[0]["phone"] = "555-1111"
        contacts[1]["email"] = "grace@example.com"
        contacts[1]["city"] = "Arlington"
        contacts[2]["phone"] = "555-2222"
        eventually(15, "A \(String(describing: readList(a, "contacts.plist")))\nB \(String(describing: readList(b, "contacts.plist")))\n\(a.log())\n\(b.log())") {
            readList(a, "contacts.plist") == contacts as NSArray && readList(b, "contacts.plist") == contacts as NSArray
        }

        // A deletes Alan and adds Barbara; then B moves Grace to the top.
        var edited = contacts
        edited.remove(at: 2)
        edited.append(["name": "Barbara", "phone": "555-0123"])
        try writeList(a, "contacts.plist", edited)
        eventually(10, "\(String(describing: readList(b, "contacts.plist")))") { readList(b, "contacts.plist") == edited as NSArray }
        let moved = [edited[1], edited[0], edited[2]]
        try writeList(b, "contacts.plist", moved)
        eventually(10, "\(String(describing: readList(a, "contacts.plist")))") { readList(a, "contacts.plist") == moved as NSArray }
    }

    func testAnInventoryArchiveIsWrittenBackAsAnArchiveFoundationUnarchives() throws {
        let items: [NSDictionary] = [
            ["itemKey": "k-1", "name": "Bear", "valueInDollars": 42, "dateCreated": Date(timeIntervalSinceReferenceDate: 700_000_000)],
            ["itemKey": "k-2", "name": "Bike", "valueInDollars": 350, "dateCreated": Date(timeIntervalSinceReferenceDate: 600_000_000)],
        ]
        try NSKeyedArchiver.archivedData(withRootObject: items, requiringSecureCoding: false).write(to: URL(fileURLWithPath: a.directory + "/items.archive"))
        try attach(a, "items.archive", "inventory", idKey: "itemKey")
        try attach(b, "items.archive", "inventory", idKey: "itemKey")
        try a.start()
        try b.start()
        func unarchived(_ agent: MirrorView) -> [NSDictionary]? {
            guard let data = FileManager.default.contents(atPath: agent.directory + "/items.archive"),
                let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: data)
            else { return nil }
            unarchiver.requiresSecureCoding = false
            unarchiver.decodingFailurePolicy = .setErrorAndReturn
            return unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [NSDictionary]
        }
        eventually(10, "\(String(describing: unarchived(b)))\n\(b.log())") { unarchived(b) == items }
        // B's app edits one value and saves its archive; A's archive follows.
        let changed: [NSDictionary] = [items[0], ["itemKey": "k-2", "name": "Bike", "valueInDollars": 300, "dateCreated": Date(timeIntervalSinceReferenceDate: 600_000_000)]]
        try NSKeyedArchiver.archivedData(withRootObject: changed, requiringSecureCoding: false).write(to: URL(fileURLWithPath: b.directory + "/items.archive"))
        eventually(10, "\(String(describing: unarchived(a)))\n\(a.log())") { unarchived(a) == changed }
    }

    func testAnAppSavingFromAnOldLoadDoesNotUndoChangesItNeverSawEvenAcrossARestart() throws {
        let contacts: [[String: Any]] = [["name": "Ada", "phone": "555-0100"], ["name": "Grace", "phone": "555-0142"]]
        try startBothAgents(on: contacts)
        // B's app has the file loaded. A changes Ada's phone and adds Alan; B's file follows.
        var onA = contacts
        onA[0]["phone"] = "555-1111"
        onA.append(["name": "Alan", "phone": "555-0199"])
        try writeList(a, "contacts.plist", onA)
        eventually(10) { readList(b, "contacts.plist") == onA as NSArray }
        // B's agent stops; the app saves what it loaded earlier plus its own edit.
        b.stop()
        var stale = contacts
        stale[1]["email"] = "grace@example.com"
        try writeList(b, "contacts.plist", stale)
        try b.start()
        var expected = onA
        expected[1]["email"] = "grace@example.com"
        func order(_ agent: MirrorView) -> String {
            (try? String(contentsOfFile: agent.directory + "/.plistsync/files/contacts.order.plist", encoding: .utf8)) ?? "-"
        }
        eventually(10, "A \(String(describing: readList(a, "contacts.plist")))\nB \(String(describing: readList(b, "contacts.plist")))\nA order \(order(a))\nB order \(order(b))\n\(a.log())\n\(b.log())\n\(server.log())") {
            readList(a, "contacts.plist") == expected as NSArray && readList(b, "contacts.plist") == expected as NSArray
        }
    }

    /// Issue 30: two apps save the same binary list at once, A editing row 0, B editing row 2
    /// and dragging row 1 to the top; both files used to converge on the merged fields with B's
    /// move lost on both sides. A save that moved nothing never undoes another's move.
    func testConcurrentSavesKeepTheMoveOfTheOneThatMoved() throws {
        let rows: [[String: Any]] = [["name": "Ada", "phone": "1"], ["name": "Grace", "phone": "2"], ["name": "Alan", "phone": "3"]]
        try startBothAgents(on: rows, format: .binary)
        var onA = rows
        onA[0]["phone"] = "1a"
        var onB = rows
        onB[2]["phone"] = "3b"
        onB = [onB[1], onB[0], onB[2]]
        try writeList(a, "contacts.plist", onA, format: .binary)
        try writeList(b, "contacts.plist", onB, format: .binary)
        let expected: [[String: Any]] = [["name": "Grace", "phone": "2"], ["name": "Ada", "phone": "1a"], ["name": "Alan", "phone": "3b"]]
        eventually(15, "A \(String(describing: readList(a, "contacts.plist")))\nB \(String(describing: readList(b, "contacts.plist")))\n\(a.log())\n\(b.log())") {
            readList(a, "contacts.plist") == expected as NSArray && readList(b, "contacts.plist") == expected as NSArray
        }
        holds(1, "settled") { readList(a, "contacts.plist") == expected as NSArray && readList(b, "contacts.plist") == expected as NSArray }
    }

    /// Issue 46, item 4a, as a user met it: the file is the app's on A (attached with its own
    /// format), B attaches it with `--format binary` before it has one; once both agents have
    /// converged (each has written the file), both apps load it, A changes row 0's phone, B row
    /// 2's stars and drags row 1 to the top, and both renames land at the same instant (two
    /// threads at a barrier). Both files end with B's order and both edits.
    func testSavesRenamedAtTheSameInstantKeepTheMoveWhateverTheAttachOrder() throws {
        let rows: [[String: Any]] = [["name": "Mom", "phone": "555-0100", "email": "mom@example.com", "stars": 5],
                                     ["name": "Dad", "phone": "555-0101", "email": "dad@example.com", "stars": 4],
                                     ["name": "Pizza", "phone": "555-0199", "email": "order@pizza.example", "stars": 3]]
        try writeList(a, "favorites.plist", rows, format: .binary)
        try attach(a, "favorites.plist", "favorites", idKey: "name")
        let (code, _, error) = PlistSyncCommand.run(["attach", "favorites.plist", "--collection", "favorites", "--id-key", "name", "--dir", b.directory,
                                                     "--format", "binary"])
        XCTAssertEqual(code, 0, error)
        try a.start()
        try b.start()
        eventually(10, "\(String(describing: readList(b, "favorites.plist")))\n\(b.log())") { readList(b, "favorites.plist") == rows as NSArray }
        eventually(10, "A's file rewritten by its agent") { readList(a, "favorites.plist") == rows as NSArray }
        holds(1, "settled") { readList(a, "favorites.plist") == rows as NSArray && readList(b, "favorites.plist") == rows as NSArray }
        // Each app loads its own file, edits, and writes a temp file; the renames wait for both.
        var onA = try XCTUnwrap(readList(a, "favorites.plist") as? [[String: Any]])
        onA[0]["phone"] = "555-0111"
        var onB = try XCTUnwrap(readList(b, "favorites.plist") as? [[String: Any]])
        onB[2]["stars"] = 1
        onB = [onB[1], onB[0], onB[2]]
        let temps = [(a, onA), (b, onB)].map { agent, list -> (String, String) in
            let temp = agent.directory + "/.favorites.plist.saving"
            let data = try! PropertyListSerialization.data(fromPropertyList: list, format: .binary, options: 0)
            XCTAssertTrue(FileManager.default.createFile(atPath: temp, contents: data))
            return (temp, agent.directory + "/favorites.plist")
        }
        let barrier = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for (temp, target) in temps {
            barrier.enter()
            Thread.detachNewThread {
                start.wait()
                rename(temp, target)
                barrier.leave()
            }
        }
        start.signal()
        start.signal()
        barrier.wait()
        let expected: [[String: Any]] = [["name": "Dad", "phone": "555-0101", "email": "dad@example.com", "stars": 4],
                                         ["name": "Mom", "phone": "555-0111", "email": "mom@example.com", "stars": 5],
                                         ["name": "Pizza", "phone": "555-0199", "email": "order@pizza.example", "stars": 1]]
        let both = { [self] in readList(a, "favorites.plist") == expected as NSArray && readList(b, "favorites.plist") == expected as NSArray }
        eventually(15, "A \(String(describing: readList(a, "favorites.plist")))\nB \(String(describing: readList(b, "favorites.plist")))\n\(a.log())\n\(b.log())", both)
        holds(1, "settled", both)
    }

    func testEditingOneElementOfAThousandSendsOneChange() throws {
        var list: [[String: Any]] = (0..<1000).map { ["name": "n\($0)", "value": $0] }
        try startBothAgents(on: list, file: "big.plist", collection: "big", seconds: 60)
        func pushed() -> Int? {
            guard let data = a.statusText().data(using: .utf8), let status = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            return status["pushed"] as? Int
        }
        eventually { pushed() != nil && a.statusText().contains("\"pending\":0") }
        let before = try XCTUnwrap(pushed())
        list[500]["value"] = -1
        try writeList(a, "big.plist", list)
        eventually(10) { readList(b, "big.plist") == list as NSArray }
        eventually(5, "\(String(describing: pushed()))") { pushed() == before + 1 }
        holds(0.5, "one element changed: one PUT") { pushed() == before + 1 }
    }

    func testTwoFilesWhoseCollectionNamesShareAPrefixEachFollowTheirOwnChanges() throws {
        // Shadow folders `files/list` and `files/list2`: a write in the second is not the first's.
        let first: [[String: Any]] = [["name": "Ada"]]
        let second: [[String: Any]] = [["name": "Grace"]]
        try writeList(a, "first.plist", first)
        try writeList(a, "second.plist", second)
        for agent in [a!, b!] {
            try attach(agent, "first.plist", "list", idKey: "name")
            try attach(agent, "second.plist", "list2", idKey: "name")
            try agent.start()
        }
        eventually(10, "\(b.log())") { readList(b, "first.plist") == first as NSArray && readList(b, "second.plist") == second as NSArray }
        let edited = second + [["name": "Alan"]]
        try writeList(a, "second.plist", edited)
        eventually(10, "\(String(describing: readList(b, "second.plist")))\n\(b.log())") { readList(b, "second.plist") == edited as NSArray }
    }

    func testRenamingAnAttachedCollectionLeavesTheAppFileOnItsOldNameAndSaysSo() throws {
        let contacts: [[String: Any]] = [["name": "Ada", "phone": "555-0100"]]
        try startBothAgents(on: contacts)
        let client = ["--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", a.directory + ".password"]
        XCTAssertEqual(PlistSyncCommand.run(["rename", "contacts", "people"] + client).0, 0)
        eventually(10, a.log()) { a.log().contains("the app file attached to contacts is synced as a new collection contacts") }
        eventually(10, a.statusText()) { a.statusText().contains("\"people\"") && a.statusText().contains("\"contacts\"") }
        // The renamed collection keeps the records; the app's file is still its own and readable.
        let (_, listed, _) = PlistSyncCommand.run(["ls", "people", "--json"] + client)
        XCTAssertTrue(listed.contains("\"id\":\"Ada\""), listed)
        XCTAssertEqual(readList(a, "contacts.plist"), contacts as NSArray)
    }

    func testACancelledEditIsSentLikeAnyOther() throws {
        let contacts: [[String: Any]] = [["name": "Ada", "phone": "555-0100"], ["name": "Grace", "phone": "555-0142"]]
        try startBothAgents(on: contacts)
        var edited = contacts
        edited[0]["phone"] = "555-9999"
        try writeList(a, "contacts.plist", edited)
        eventually(10) { readList(b, "contacts.plist") == edited as NSArray }
        // The user cancels: the app writes the old value back. That is an edit, not a stale save.
        try writeList(a, "contacts.plist", contacts)
        eventually(10, "\(String(describing: readList(b, "contacts.plist")))") {
            readList(a, "contacts.plist") == contacts as NSArray && readList(b, "contacts.plist") == contacts as NSArray
        }
        // A row the app added and then removes again goes away everywhere.
        let added = contacts + [["name": "Alan", "phone": "555-0199"]]
        try writeList(a, "contacts.plist", added)
        eventually(10) { readList(b, "contacts.plist") == added as NSArray }
        try writeList(a, "contacts.plist", contacts)
        eventually(10, "\(String(describing: readList(b, "contacts.plist")))") {
            readList(a, "contacts.plist") == contacts as NSArray && readList(b, "contacts.plist") == contacts as NSArray
        }
    }

    /// Issue 18 item 9: attaching an app file to a collection the agent already mirrors as a
    /// folder (made here on A, downloaded on B) adopts the collection's records into the file;
    /// nothing is deleted on the server or on any mirror, and the file syncs from then on.
    func testAttachingACollectionAlreadyMirroredAsAFolderAdoptsItsRecords() throws {
        try a.start()
        try b.start()
        try a.save("people", "Ada", ["name": .string("Ada"), "phone": .string("555-0100")])
        eventually(10, b.log()) { b.fields("people", "Ada") != nil }
        let client = ["--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", a.directory + ".password"]
        func serverIDs() throws -> String { PlistSyncCommand.run(["ls", "people", "--json"] + client).1 }

        // A attaches a file it does not have yet; B, whose folder came from the server, too.
        for agent in [a!, b!] {
            agent.stop()
            let (code, _, error) = PlistSyncCommand.run(
                ["attach", "people.plist", "--collection", "people", "--id-key", "name", "--dir", agent.directory, "--format", "binary"])
            XCTAssertEqual(code, 0, error)
            try agent.start()
        }
        let ada: [[String: Any]] = [["name": "Ada", "phone": "555-0100"]]
        for agent in [a!, b!] {
            eventually(10, "\(String(describing: readList(agent, "people.plist")))\n\(agent.log())") { readList(agent, "people.plist") == ada as NSArray }
        }
        let listed = try serverIDs()
        XCTAssertTrue(listed.contains("\"id\":\"Ada\""), listed)
        // The folder that mirrored the collection before is left as it was.
        XCTAssertNotNil(a.fields("people", "Ada"))

        // From now on the file is the collection: a save on A reaches B's file and the server.
        let edited: [[String: Any]] = [["name": "Ada", "phone": "555-0199"], ["name": "Grace", "phone": "555-0142"]]
        try writeList(a, "people.plist", edited)
        eventually(10, "\(String(describing: readList(b, "people.plist")))\n\(b.log())") { readList(b, "people.plist") == edited as NSArray }
        let relisted = try serverIDs()
        XCTAssertTrue(relisted.contains("555-0199"), relisted)
    }
}
