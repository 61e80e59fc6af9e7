import Foundation
import XCTest

/// The console's pure modules run in node (Deploy/test.sh installs it): the merge module against
/// Protocol/merge-cases.json, the table MergeTableTests runs against the agent's decisions.
final class ConsoleModuleTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testTheConsolesMergeModuleDecidesEveryCaseOfTheTableAsTheAgentDoes() throws {
        guard FileManager.default.fileExists(atPath: "/usr/bin/node") else {
            if ProcessInfo.processInfo.environment["PLISTSYNC_REQUIRE_OUTSIDE_DATA"] != nil { return XCTFail("node is missing (Deploy/test.sh installs nodejs)") }
            throw XCTSkip("node is missing (Deploy/test.sh installs nodejs)")
        }
        let (status, output, error) = try PlistSyncBinary.runTool("/usr/bin/node", [Self.root.appendingPathComponent("Tests/Console/merge-table.mjs").path])
        XCTAssertEqual(status, 0, output + error)
        XCTAssertTrue(output.range(of: #"merge table: [0-9]+ passed, 0 failed"#, options: .regularExpression) != nil, output)
    }
}
