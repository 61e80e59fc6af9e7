import Foundation
import XCTest

/// Issue 12, item 1: the server layer knows stores only through `ServerStore`. A ServerKit file
/// that imports a store engine's module would tie every future store to it.
final class LayeringTests: XCTestCase {
    /// The Swift files under `Sources/<module>`, subfolders included, by path below it.
    private func swiftFiles(_ module: String) throws -> [(path: String, text: String)] {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/\(module)")
        let paths = try XCTUnwrap(FileManager.default.subpathsOfDirectory(atPath: folder.path)).filter { $0.hasSuffix(".swift") }
        return try paths.map { ($0, try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)) }
    }

    func testServerKitImportsNoStoreEngine() throws {
        let files = try swiftFiles("ServerKit") + swiftFiles("ServerHTTP")
        XCTAssertTrue(files.contains { $0.path.hasPrefix("Core/") }, "subfolders are read too")
        for (path, text) in files {
            for engine in ["SQLiteKit", "SQLiteStore", "CSQLite", "PostgresKit", "PostgresStore", "CLibPQ"] {
                XCTAssertFalse(text.contains("import \(engine)\n"), "\(path) imports \(engine)")
            }
        }
    }

    /// Issue 29: the HTTP API talks to its session in values (`Command` in, `ServerOutput`
    /// out): it writes no request line, reads no reply line, and reads no words by position.
    func testTheHTTPAPIWritesAndReadsNoProtocolText() throws {
        let files = try swiftFiles("ServerHTTP")
        XCTAssertFalse(files.isEmpty)
        for (path, text) in files {
            for forbidden in ["ServerLine", "ResponseLine", "RequestParser", ".words", "words[", "\"* ", "requestText"] {
                XCTAssertFalse(text.contains(forbidden), "ServerHTTP/\(path) uses \(forbidden)")
            }
        }
    }

    /// Issue 19: a store knows the server only through the contract in SyncCore (`ServerStore`,
    /// `StoreFailure`, `ClusterEvent`): neither store imports the server.
    func testStoresDoNotImportTheServer() throws {
        for module in ["SQLiteStore", "PostgresStore"] {
            let files = try swiftFiles(module)
            XCTAssertFalse(files.isEmpty)
            for (path, text) in files {
                XCTAssertFalse(text.contains("import ServerKit\n"), "\(module)/\(path) imports ServerKit")
            }
        }
    }

    /// Issue 12, item 3: the agent, the command line and the bench talk to the server through
    /// `SyncClient.ClientConnection` only, and write requests through `Command.requestText`:
    /// none of them frames lines or writes a protocol verb of its own.
    func testClientsTalkThroughTheOneClientConnection() throws {
        let verbs = ["HELLO", "AUTH", "PUT", "DEL", "MOVE", "SUB", "LIST", "CREATE", "STATS", "QUIT"]
        for module in ["AgentKit", "LoadGenerator", "PlistSyncCommands"] {
            for (file, text) in try swiftFiles(module) {
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
        let files = try swiftFiles("AgentDecisions")
        XCTAssertFalse(files.isEmpty)
        for (file, text) in files {
            for line in text.split(separator: "\n") where line.hasPrefix("import ") {
                XCTAssertTrue(["import SyncCore", "import SyncProtocol", "import PlistFormat"].contains(String(line)), "\(file): \(line)")
            }
        }
    }

    /// Issue 46: the server's decisions run on injected time and work (`ServerClock`,
    /// `ServerWork`): outside the host (`ServerKit/Host`) no file asks a libuv loop or the wall
    /// clock itself, so the test kit's simulated server runs the same code on virtual time.
    func testOnlyTheServersHostAsksTheLoopOrTheWallClock() throws {
        // The clock's own protocol names what it offers.
        let files = try swiftFiles("ServerKit").filter { !$0.path.hasPrefix("Host/") && $0.path != "Effects/ServerClock.swift" }
            + swiftFiles("ServerHTTP").filter { $0.path != "HTTPFront.swift" }
        XCTAssertTrue(files.contains { $0.path.hasPrefix("Core/") } && files.contains { $0.path.hasPrefix("Session/") })
        for (path, text) in files {
            for forbidden in ["Date()", "LoopTimer", "nowMilliseconds", "runBlocking", "WorkerThread(", "loop.atEndOfTurn", "flushOutputNow()"] {
                let uses = text.components(separatedBy: "\n").filter { $0.contains(forbidden) && !$0.contains("clock.") && !$0.trimmingCharacters(in: .whitespaces).hasPrefix("///") }
                XCTAssertTrue(uses.isEmpty, "ServerKit/\(path) uses \(forbidden) itself: \(uses)")
            }
        }
    }
}
