import Foundation
import XCTest

/// The console's pure modules run in node (Deploy/test.sh installs it): the merge module against
/// Protocol/merge-cases.json, the table MergeTableTests runs against the agent's decisions; the
/// QR encoder against zbar.
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

    /// The console's QR encoder (invitation links), every version it makes, read back by an outside
    /// decoder: zbarimg (Debian's zbar-tools).
    func testTheConsolesQRCodesDecodeWithZbar() throws {
        for tool in ["/usr/bin/node", "/usr/bin/zbarimg"] where !FileManager.default.fileExists(atPath: tool) {
            if ProcessInfo.processInfo.environment["PLISTSYNC_REQUIRE_OUTSIDE_DATA"] != nil { return XCTFail("\(tool) is missing (Deploy/test.sh installs it)") }
            throw XCTSkip("\(tool) is missing (Deploy/test.sh installs nodejs and zbar-tools)")
        }
        let (status, output, error) = try PlistSyncBinary.runTool("/usr/bin/node", [Self.root.appendingPathComponent("Tests/Console/qr-decode.mjs").path])
        XCTAssertEqual(status, 0, output + error)
        XCTAssertTrue(output.contains("qr: 26 decoded, 0 failed; sizes 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61, 65, 69"), output)
    }
}
