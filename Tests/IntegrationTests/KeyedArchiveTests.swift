import Foundation
import XCTest

/// An inventory item the way the app archives it (NSCoding, class name BNRItem).
final class ArchivedItem: NSObject, NSCoding {
    let name: String
    let serialNumber: String?
    let valueInDollars: Int
    let dateCreated: Date
    let itemKey: String

    init(name: String, serialNumber: String?, valueInDollars: Int, dateCreated: Date, itemKey: String) {
        (self.name, self.serialNumber, self.valueInDollars, self.dateCreated, self.itemKey) = (name, serialNumber, valueInDollars, dateCreated, itemKey)
    }

    func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(serialNumber, forKey: "serialNumber")
        coder.encode(valueInDollars, forKey: "valueInDollars")
        coder.encode(dateCreated, forKey: "dateCreated")
        coder.encode(itemKey, forKey: "itemKey")
    }

    required init?(coder: NSCoder) {
        guard let name = coder.decodeObject(forKey: "name") as? String, let date = coder.decodeObject(forKey: "dateCreated") as? Date,
            let key = coder.decodeObject(forKey: "itemKey") as? String
        else { return nil }
        (self.name, dateCreated, itemKey) = (name, date, key)
        serialNumber = coder.decodeObject(forKey: "serialNumber") as? String
        valueInDollars = coder.decodeInteger(forKey: "valueInDollars")
    }

    override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? ArchivedItem else { return false }
        return (name, serialNumber, valueInDollars, dateCreated, itemKey) == (other.name, other.serialNumber, other.valueInDollars, other.dateCreated, other.itemKey)
    }
}

/// Issue 10: NSKeyedArchiver archives (an inventory of custom objects, a presidents list under
/// its own root key) import as records and export as archives Foundation unarchives again.
final class KeyedArchiveTests: XCTestCase {
    private var server: LiveServer!
    private var folder: String!
    private var client: [String] = []

    override func setUpWithError() throws {
        server = try LiveServer.running()
        folder = NSTemporaryDirectory() + "plistsync-archive-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "pw\n".write(toFile: folder + "/password", atomically: true, encoding: .utf8)
        client = ["--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", folder + "/password"]
    }

    override func tearDown() {
        server = nil
        try? FileManager.default.removeItem(atPath: folder)
    }

    private let items = [
        ArchivedItem(name: "Bear", serialNumber: "A1B2", valueInDollars: 42, dateCreated: Date(timeIntervalSinceReferenceDate: 700_000_000.5), itemKey: "k-1"),
        ArchivedItem(name: "Éclair", serialNumber: nil, valueInDollars: 3, dateCreated: Date(timeIntervalSinceReferenceDate: 600_000_000), itemKey: "k-2"),
    ]

    func testAnInventoryArchiveOfCustomObjectsRoundTripsThroughTheServer() throws {
        let source = folder + "/items.archive"
        try NSKeyedArchiver.archivedData(withRootObject: items, requiringSecureCoding: false).write(to: URL(fileURLWithPath: source))
        let (code, out, error) = PlistSyncCommand.run(["import", source, "--collection", "inventory", "--id-key", "itemKey"] + client)
        XCTAssertEqual(code, 0, error)
        XCTAssertEqual(out, "imported 2 records into inventory: 2 created, 0 updated\n")
        let (_, bear, _) = PlistSyncCommand.run(["get", "inventory", "k-1", "--json"] + client)
        XCTAssertTrue(bear.contains("\"valueInDollars\":42") && bear.contains("\"name\":\"Bear\"") && bear.contains("\"$date\""), bear)
        let exported = folder + "/out.archive"
        let (exportCode, _, exportError) = PlistSyncCommand.run(
            ["export", "inventory", "--format", "archive", "--class", "BNRItem", "-o", exported] + client)
        XCTAssertEqual(exportCode, 0, exportError)
        let data = try Data(contentsOf: URL(fileURLWithPath: exported))
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        unarchiver.decodingFailurePolicy = .setErrorAndReturn
        unarchiver.setClass(ArchivedItem.self, forClassName: "BNRItem")
        let decoded = unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [ArchivedItem]
        XCTAssertNil(unarchiver.error)
        XCTAssertEqual(decoded, items, "Foundation reads the exported archive back, every field and type intact")
    }

    func testAPresidentsArchiveUnderItsOwnRootKeyKeepsThatKey() throws {
        let presidents: [NSDictionary] = [
            ["President": 1, "Name": "George Washington", "FromYear": "1789", "ToYear": "1797", "Party": "None"],
            ["President": 2, "Name": "John Adams", "FromYear": "1797", "ToYear": "1801", "Party": "Federalist"],
        ]
        let archiver = NSKeyedArchiver(requiringSecureCoding: false)
        archiver.encode(presidents, forKey: "Presidents")
        archiver.finishEncoding()
        let source = folder + "/Presidents.plist"
        try archiver.encodedData.write(to: URL(fileURLWithPath: source))
        XCTAssertEqual(PlistSyncCommand.run(["import", source, "--collection", "presidents", "--id-key", "President"] + client).0, 0)
        let (_, listed, _) = PlistSyncCommand.run(["ls", "presidents", "--json"] + client)
        let records = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]]
        XCTAssertEqual(records?.compactMap { $0["id"] as? String }, ["1", "2"], listed)
        let exported = folder + "/out.plist"
        XCTAssertEqual(PlistSyncCommand.run(["export", "presidents", "--format", "archive", "--root-key", "Presidents", "-o", exported] + client).0, 0)
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: Data(contentsOf: URL(fileURLWithPath: exported)))
        unarchiver.requiresSecureCoding = false
        unarchiver.decodingFailurePolicy = .setErrorAndReturn
        XCTAssertEqual(unarchiver.decodeObject(forKey: "Presidents") as? [NSDictionary], presidents)
    }
}
