import Foundation
import XCTest

/// Issue 10, item 5: the two archive-shaped seed files (an inventory of NSCoding objects, a
/// presidents list under its own root key), each edited by two apps on two agents at once:
/// different fields of one element, an add and a delete, a move, a cancelled edit. Both files
/// converge and Foundation unarchives both.
final class AttachedArchiveTests: TwoAgentTestCase {

    /// How the test's app saves and loads its list; rows are dictionaries in the test.
    private struct AppFile {
        let name: String
        /// How `attach` is told the format on a machine where the app has not saved it yet.
        let format: [String]
        let save: ([[String: Any]]) throws -> Data
        let load: (Data) -> [[String: Any]]?
    }

    private func save(_ app: AppFile, _ agent: MirrorView, _ rows: [[String: Any]]) throws {
        let temp = agent.directory + "/." + app.name + ".saving"
        try app.save(rows).write(to: URL(fileURLWithPath: temp))
        XCTAssertEqual(rename(temp, agent.directory + "/" + app.name), 0)
    }

    private func load(_ app: AppFile, _ agent: MirrorView) -> NSArray? {
        FileManager.default.contents(atPath: agent.directory + "/" + app.name).flatMap(app.load).map { $0 as NSArray }
    }

    /// Both apps' files equal `rows` (as Foundation reads them).
    private func converge(_ app: AppFile, _ rows: [[String: Any]], _ step: String, file: StaticString = #filePath, line: UInt = #line) {
        func dates(_ agent: MirrorView) -> String {
            (load(app, agent) as? [[String: Any]] ?? []).map { "\(($0["dateCreated"] as? Date)?.timeIntervalSinceReferenceDate ?? -1)" }.joined(separator: ", ")
        }
        eventually(15, "\(step)\nA \(String(describing: load(app, a)))\nB \(String(describing: load(app, b)))\ndates A \(dates(a)) B \(dates(b))\n\(a.log())\n\(b.log())",
                   file: file, line: line) {
            load(app, a) == rows as NSArray && load(app, b) == rows as NSArray
        }
    }

    /// An unarchiver for an app's file, as apps open theirs (classes not checked up front).
    private static func unarchiver(_ data: Data) -> NSKeyedUnarchiver? {
        guard let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: data) else { return nil }
        unarchiver.requiresSecureCoding = false
        unarchiver.decodingFailurePolicy = .setErrorAndReturn
        return unarchiver
    }

    /// The scenario for one file kind: `fieldA` and `fieldB` are two fields of a row that the
    /// two apps change at once to `valueA` and `valueB`; `added` is a new row.
    private func editOnBothSides(_ app: AppFile, collection: String, idKey: String, rows: [[String: Any]],
                                 fieldA: String, valueA: Any, fieldB: String, valueB: Any, added: [String: Any]) throws {
        XCTAssertGreaterThanOrEqual(rows.count, 3)
        try save(app, a, rows)
        for agent in [a!, b!] {
            let (code, _, error) = PlistSyncCommand.run(["attach", app.name, "--collection", collection, "--id-key", idKey, "--dir", agent.directory] + app.format)
            XCTAssertEqual(code, 0, error)
            try agent.start()
        }
        converge(app, rows, "first sync")

        // At once: A edits one field of row 0 and adds a row; B edits another field of row 0
        // and deletes row 2.
        var onA = rows
        onA[0][fieldA] = valueA
        onA.append(added)
        var onB = rows
        onB[0][fieldB] = valueB
        onB.remove(at: 2)
        try save(app, a, onA)
        try save(app, b, onB)
        var expected = rows
        expected[0][fieldA] = valueA
        expected[0][fieldB] = valueB
        expected.remove(at: 2)
        expected.append(added)
        converge(app, expected, "both saves kept")

        // B moves the new row to the top.
        let moved = [expected[expected.count - 1]] + expected.dropLast()
        try save(app, b, moved)
        converge(app, moved, "the move")

        // A edits a field and cancels: the old value is written back and travels too.
        var cancelled = moved
        cancelled[2][fieldA] = valueA
        try save(app, a, cancelled)
        converge(app, cancelled, "the edit before the cancel")
        try save(app, a, moved)
        converge(app, moved, "the cancel")
    }

    /// An inventory app's archive of `BNRItem` objects (name, serial number, value, date).
    private var inventory: AppFile {
        func item(_ row: [String: Any]) -> ArchivedItem {
            ArchivedItem(name: row["name"] as? String ?? "", serialNumber: row["serialNumber"] as? String, valueInDollars: row["valueInDollars"] as? Int ?? 0,
                         dateCreated: row["dateCreated"] as? Date ?? Date(timeIntervalSinceReferenceDate: 0), itemKey: row["itemKey"] as? String ?? "")
        }
        func row(_ item: ArchivedItem) -> [String: Any] {
            var row: [String: Any] = ["name": item.name, "valueInDollars": item.valueInDollars, "dateCreated": item.dateCreated, "itemKey": item.itemKey]
            row["serialNumber"] = item.serialNumber
            return row
        }
        return AppFile(name: "items.archive", format: ["--format", "archive", "--class", "BNRItem"], save: { rows in
            let archiver = NSKeyedArchiver(requiringSecureCoding: false)
            archiver.setClassName("BNRItem", for: ArchivedItem.self)
            archiver.encode(rows.map(item), forKey: NSKeyedArchiveRootObjectKey)
            archiver.finishEncoding()
            return archiver.encodedData
        }, load: { data in
            guard let unarchiver = Self.unarchiver(data) else { return nil }
            unarchiver.setClass(ArchivedItem.self, forClassName: "BNRItem")
            return (unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [ArchivedItem])?.map(row)
        })
    }

    func testTwoEditorsOfAnInventoryArchiveOfCustomObjectsConverge() throws {
        let rows: [[String: Any]] = [
            ["name": "Bear", "serialNumber": "A1B2", "valueInDollars": 42, "dateCreated": Date(timeIntervalSinceReferenceDate: 700_000_000), "itemKey": "k-1"],
            ["name": "Éclair", "valueInDollars": 3, "dateCreated": Date(timeIntervalSinceReferenceDate: 600_000_000), "itemKey": "k-2"],
            ["name": "Spork", "serialNumber": "S-9", "valueInDollars": 7, "dateCreated": Date(timeIntervalSinceReferenceDate: 650_000_000), "itemKey": "k-3"],
            ["name": "Mug", "serialNumber": "M-1", "valueInDollars": 12, "dateCreated": Date(timeIntervalSinceReferenceDate: 660_000_000), "itemKey": "k-4"],
        ]
        try editOnBothSides(inventory, collection: "inventory", idKey: "itemKey", rows: rows,
                            fieldA: "valueInDollars", valueA: 41, fieldB: "name", valueB: "Teddy bear",
                            added: ["name": "Kite", "valueInDollars": 15, "dateCreated": Date(timeIntervalSinceReferenceDate: 710_000_000), "itemKey": "k-5"])
    }

    func testTwoEditorsOfAPresidentsArchiveUnderItsOwnRootKeyConverge() throws {
        let presidents = AppFile(name: "Presidents.plist", format: ["--format", "archive", "--root-key", "Presidents"], save: { rows in
            let archiver = NSKeyedArchiver(requiringSecureCoding: false)
            archiver.encode(rows.map { $0 as NSDictionary }, forKey: "Presidents")
            archiver.finishEncoding()
            return archiver.encodedData
        }, load: { data in
            (Self.unarchiver(data)?.decodeObject(forKey: "Presidents") as? [NSDictionary])?.map { $0 as? [String: Any] ?? [:] }
        })
        let rows: [[String: Any]] = [
            ["President": 1, "Name": "George Washington", "FromYear": "1789", "ToYear": "1797", "Party": "None"],
            ["President": 2, "Name": "John Adams", "FromYear": "1797", "ToYear": "1801", "Party": "Federalist"],
            ["President": 3, "Name": "Thomas Jefferson", "FromYear": "1801", "ToYear": "1809", "Party": "Democratic-Republican"],
            ["President": 4, "Name": "James Madison", "FromYear": "1809", "ToYear": "1817", "Party": "Democratic-Republican"],
        ]
        try editOnBothSides(presidents, collection: "presidents", idKey: "President", rows: rows,
                            fieldA: "Party", valueA: "Independent", fieldB: "ToYear", valueB: "1798",
                            added: ["President": 5, "Name": "James Monroe", "FromYear": "1817", "ToYear": "1825", "Party": "Democratic-Republican"])
    }

    /// Issue 18 item 2: dates with fractions of a second (an NSDate is a Double) reach the other
    /// machine's archive bit-identical, both ways; they were floored to whole seconds there.
    func testFractionalDatesInAnArchiveArriveExactlyAsTheAppWroteThem() throws {
        let rows: [[String: Any]] = [
            ["name": "Bear", "serialNumber": "A1B2", "valueInDollars": 42, "dateCreated": Date(timeIntervalSinceReferenceDate: 700_000_000.123_456_789), "itemKey": "k-1"],
            ["name": "Bike", "valueInDollars": 350, "dateCreated": Date(timeIntervalSinceReferenceDate: 600_000_000.987_654_321), "itemKey": "k-2"],
        ]
        try save(inventory, a, rows)
        for agent in [a!, b!] {
            let (code, _, error) = PlistSyncCommand.run(["attach", inventory.name, "--collection", "inventory", "--id-key", "itemKey", "--dir", agent.directory]
                + inventory.format)
            XCTAssertEqual(code, 0, error)
            try agent.start()
        }
        converge(inventory, rows, "first sync")
        let added = rows + [["name": "Kite", "valueInDollars": 15, "dateCreated": Date(timeIntervalSinceReferenceDate: 710_000_000.000_001_5), "itemKey": "k-3"]]
        try save(inventory, b, added)
        converge(inventory, added, "a row added on B")
    }
}
