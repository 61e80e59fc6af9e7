import Foundation
import XCTest

/// Issue 12, item 1: the server layer knows stores only through `ServerStore`. A ServerKit file
/// that imports a store engine's module would tie every future store to it.
final class LayeringTests: XCTestCase {
    func testServerKitImportsNoStoreEngine() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/ServerKit")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for engine in ["SQLiteKit", "RecordStore", "CSQLite"] {
                XCTAssertFalse(text.contains("import \(engine)\n"), "\(file) imports \(engine)")
            }
        }
    }
}
