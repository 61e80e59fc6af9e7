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
            for engine in ["SQLiteKit", "SQLiteStore", "CSQLite"] {
                XCTAssertFalse(text.contains("import \(engine)\n"), "\(file) imports \(engine)")
            }
        }
    }

    /// Issue 19: a store knows the server only through the contract in SyncCore (`ServerStore`,
    /// `StoreFailure`, `ClusterEvent`): neither store imports the server.
    func testStoresDoNotImportTheServer() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        for module in ["SQLiteStore", "PostgresStore"] {
            let folder = sources.appendingPathComponent(module)
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
            XCTAssertFalse(files.isEmpty)
            for file in files {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                XCTAssertFalse(text.contains("import ServerKit\n"), "\(module)/\(file) imports ServerKit")
            }
        }
    }

    /// Issue 12, item 3: the agent, the command line and the bench talk to the server through
    /// `SyncClient.ClientConnection` only, and write requests through `Command.requestText`:
    /// none of them frames lines or writes a protocol verb of its own.
    func testClientsTalkThroughTheOneClientConnection() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let verbs = ["HELLO", "AUTH", "PUT", "DEL", "MOVE", "SUB", "LIST", "CREATE", "STATS", "QUIT"]
        for module in ["AgentKit", "LoadGenerator", "plistsync"] {
            let folder = sources.appendingPathComponent(module)
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                XCTAssertFalse(text.contains("LineFramer("), "\(module)/\(file) frames server lines itself")
                XCTAssertFalse(text.contains(".ok(_, let words"), "\(module)/\(file) reads a reply by the position of its words (use Reply)")
                for verb in verbs {
                    XCTAssertNil(text.range(of: "\"[A-Za-z0-9]+ \(verb) ", options: .regularExpression), "\(module)/\(file) writes \(verb) by hand")
                }
            }
        }
    }

    /// Issue 18: the agent's decisions are pure: AgentDecisions imports only the pure modules
    /// (no Foundation file APIs, no event loop, no SQLite), so every rule is a function of values.
    func testAgentDecisionsImportNothingThatDoesIO() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AgentDecisions")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import ") {
                XCTAssertTrue(["import SyncCore", "import SyncProtocol", "import PlistFormat"].contains(String(line)), "\(file): \(line)")
            }
        }
    }
}
