import PlistFormat
import SyncProtocol
import XCTest

@testable import AgentKit

/// The array-of-records file shape, without a server.
final class CollectionFileTests: XCTestCase {
    func testIDsComeFromTheKeyOrAreMadeAndOrderIsKept() throws {
        let file = PlistFile.encode(.array([.dictionary(["n": .integer(7), "name": .string("b")]), .dictionary(["n": .integer(3)])]), as: .binary)
        let (byKey, kind) = try CollectionFile.entries(file, idKey: "n", newID: { "unused" })
        XCTAssertEqual(kind, .plist(.binary))
        XCTAssertEqual(byKey.map(\.id), ["7", "3"])
        var counter = 0
        let made = try CollectionFile.entries(file, idKey: nil, newID: { counter += 1; return "id\(counter)" }).entries
        XCTAssertEqual(made.map(\.id), ["id1", "id2"])
        XCTAssertThrowsError(try CollectionFile.entries(file, idKey: "name", newID: { "" })) { error in
            XCTAssertEqual((error as? CollectionFile.ShapeError)?.description, "element 1 has no \"name\"")
        }
    }

    func testExportAddsTheIDUnderTheKeyOnlyWhenMissing() throws {
        let entries = [CollectionFile.Entry(id: "a", fields: ["x": .integer(1)]), CollectionFile.Entry(id: "b", fields: ["key": .string("own")])]
        let bytes = CollectionFile.encode(entries, idKey: "key", as: .plist(.xml))
        XCTAssertEqual(try PlistFile.decode(bytes).0, .array([.dictionary(["x": .integer(1), "key": .string("a")]), .dictionary(["key": .string("own")])]))
    }
}
