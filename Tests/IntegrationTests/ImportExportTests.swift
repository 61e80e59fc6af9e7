import Foundation
import XCTest

/// Issue 10, item 4: `plistsync import` and `export` move a whole collection as one plist array,
/// made and read back by Foundation's PropertyListSerialization.
final class ImportExportTests: XCTestCase {
    private var server: LiveServer!
    private var folder: String!
    private var passwordFile: String!

    override func setUpWithError() throws {
        server = try LiveServer.running()
        folder = NSTemporaryDirectory() + "plistsync-transfer-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        passwordFile = folder + "/password"
        try "pw\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        server = nil
        try? FileManager.default.removeItem(atPath: folder)
    }

    private var client: [String] { ["--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", passwordFile] }

    private let inventory: [[String: Any]] = [
        ["name": "Bear", "serialNumber": "A1B2", "valueInDollars": 42, "dateCreated": Date(timeIntervalSince1970: 1_700_000_000),
         "itemKey": "k-1", "photo": Data([0, 1, 2, 255]), "tags": ["toy", "brown"], "weight": 1.25],
        ["name": "Éclair ☕️", "valueInDollars": 3, "dateCreated": Date(timeIntervalSince1970: 1_600_000_000), "itemKey": "k-2",
         "dimensions": ["w": 2, "h": 1.5]],
        ["name": "Bike", "serialNumber": "Z9", "valueInDollars": 350, "dateCreated": Date(timeIntervalSince1970: 1_500_000_000),
         "itemKey": "k-3", "inStock": true],
    ]

    private func write(_ list: [[String: Any]], _ format: PropertyListSerialization.PropertyListFormat, to name: String) throws -> String {
        let path = folder + "/" + name
        try PropertyListSerialization.data(fromPropertyList: list, format: format, options: 0).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func foundationRead(_ path: String) throws -> (NSArray, PropertyListSerialization.PropertyListFormat) {
        var format = PropertyListSerialization.PropertyListFormat.xml
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let list = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        return (try XCTUnwrap(list as? NSArray), format)
    }

    func testAnArrayFileImportsInOrderAndExportsAsFoundationWroteIt() throws {
        for (format, flag) in [(PropertyListSerialization.PropertyListFormat.xml, "xml"), (.binary, "binary")] {
            let collection = "inv-\(flag)"
            let source = try write(inventory, format, to: "items-\(flag).plist")
            let (code, out, error) = PlistSyncCommand.run(["import", source, "--collection", collection, "--id-key", "itemKey"] + client)
            XCTAssertEqual(code, 0, error)
            XCTAssertEqual(out, "imported 3 records into \(collection): 3 created, 0 updated\n")
            let (_, listed, _) = PlistSyncCommand.run(["ls", collection, "--json"] + client)
            let records = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]]
            XCTAssertEqual(records?.compactMap { $0["id"] as? String }, ["k-1", "k-2", "k-3"], listed)
            let exported = folder + "/out-\(flag).plist"
            let (exportCode, _, exportError) = PlistSyncCommand.run(["export", collection, "--format", flag, "-o", exported] + client)
            XCTAssertEqual(exportCode, 0, exportError)
            let (list, readFormat) = try foundationRead(exported)
            XCTAssertEqual(readFormat, format)
            XCTAssertEqual(list, inventory as NSArray, "every type survives: integer vs real, date, data, nested, Unicode")
        }
    }

    func testReimportingUpdatesByIDAndWithoutAnIDKeyEveryElementIsNew() throws {
        let source = try write(inventory, .xml, to: "items.plist")
        XCTAssertEqual(PlistSyncCommand.run(["import", source, "--collection", "inv", "--id-key", "itemKey"] + client).0, 0)
        var changed = inventory
        changed[1]["valueInDollars"] = 4
        _ = try write(changed, .xml, to: "items.plist")
        let (code, out, _) = PlistSyncCommand.run(["import", source, "--collection", "inv", "--id-key", "itemKey"] + client)
        XCTAssertEqual(code, 0)
        XCTAssertEqual(out, "imported 3 records into inv: 0 created, 3 updated\n")
        let (_, one, _) = PlistSyncCommand.run(["get", "inv", "k-2", "--json"] + client)
        XCTAssertTrue(one.contains("\"valueInDollars\":4"), one)
        let (_, fresh, _) = PlistSyncCommand.run(["import", source, "--collection", "anon"] + client)
        XCTAssertEqual(fresh, "imported 3 records into anon: 3 created, 0 updated\n")
        let exported = folder + "/anon.plist"
        XCTAssertEqual(PlistSyncCommand.run(["export", "anon", "-o", exported] + client).0, 0)
        XCTAssertEqual(try foundationRead(exported).0, changed as NSArray)
    }

    func testFilesThatAreNotAnArrayOfRecordsAreRefusedWithAReason() throws {
        let dictionary = folder + "/dict.plist"
        try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .xml, options: 0).write(to: URL(fileURLWithPath: dictionary))
        let duplicate = try write([["id": "x"], ["id": "x"]], .xml, to: "dup.plist")
        let badID = try write([["id": "../up"]], .xml, to: "bad.plist")
        for (path, reason) in [(dictionary, "the top level is not an array"), (duplicate, "appears twice"), (badID, "cannot be a record id")] {
            let (code, _, error) = PlistSyncCommand.run(["import", path, "--collection", "c", "--id-key", "id"] + client)
            XCTAssertEqual(code, 1, error)
            XCTAssertTrue(error.contains(reason), error)
        }
        let (code, _, error) = PlistSyncCommand.run(["export", "missing"] + client)
        XCTAssertEqual(code, 1)
        XCTAssertTrue(error.contains("NOT_FOUND"), error)
    }
}
