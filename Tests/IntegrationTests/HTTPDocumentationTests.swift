import Foundation
import XCTest

/// Replays every example of Protocol/HTTP.md, in order, with curl against a live server: each
/// ```console block is `$ <command>` and the output it must print, where `…` stands for any
/// text (tokens, times).
final class HTTPDocumentationTests: XCTestCase {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/HTTP.md")

    struct Example {
        let command: String
        let expected: String
    }

    static func examples(in text: String) -> [Example] {
        var examples: [Example] = []
        let blocks = text.components(separatedBy: "```console\n").dropFirst()
        for block in blocks {
            guard let end = block.range(of: "\n```") else { continue }
            let lines = block[..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            guard let first = lines.first, first.hasPrefix("$ ") else { continue }
            examples.append(Example(command: String(first.dropFirst(2)), expected: lines.dropFirst().joined(separator: "\n")))
        }
        return examples
    }

    /// Whether `output` matches `expected` line for line, `…` matching any run of characters.
    static func matches(_ output: String, _ expected: String) -> Bool {
        let pattern = expected.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.components(separatedBy: "…").map(NSRegularExpression.escapedPattern(for:)).joined(separator: ".*")
        }.joined(separator: "\n")
        return output.range(of: "^" + pattern + "$", options: .regularExpression) != nil
    }

    func testEveryExampleAnswersAsDocumented() throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let examples = Self.examples(in: text)
        XCTAssertGreaterThanOrEqual(examples.count, 30, "every endpoint has an example")
        let server = try TestServer(extraArguments: ["--http-listen", "127.0.0.1:0"])
        try server.addUser("alice", password: "wonderland")
        try server.addUser("bob", password: "bobpw")
        try server.addUser("root", password: "rootpw", admin: true)
        try server.start()
        let url = "http://127.0.0.1:\(server.httpPort)"
        // Logged in as a reader of the document would be: with curl (the token's label says so).
        let (_, login, _) = try PlistSyncBinary.runTool(
            "/usr/bin/curl", ["-s", url + "/api/login", "-H", "Content-Type: application/json", "-d", #"{"user":"alice","password":"wonderland"}"#])
        let token = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(login.utf8)) as? [String: Any])?["token"] as? String, login)
        let (_, rootLogin, _) = try PlistSyncBinary.runTool(
            "/usr/bin/curl", ["-s", url + "/api/login", "-H", "Content-Type: application/json", "-d", #"{"user":"root","password":"rootpw"}"#])
        let admin = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(rootLogin.utf8)) as? [String: Any])?["token"] as? String, rootLogin)
        let environment = ["URL": url, "TOKEN": token, "ADMIN": admin]
        for example in examples {
            let (_, output, _) = try PlistSyncBinary.runTool("/bin/bash", ["-c", example.command], environment: environment)
            var printed = output.replacingOccurrences(of: "\r", with: "")
            while printed.hasSuffix("\n") { printed.removeLast() }
            XCTAssertTrue(Self.matches(printed, example.expected), "$ \(example.command)\nprinted:\n\(printed)\ndocumented:\n\(example.expected)")
        }
    }

    func testTheMatcherCanFail() {
        XCTAssertTrue(Self.matches(#"{"token":"pst_12","user":"alice"}"#, #"{"token":"pst_…","user":"alice"}"#))
        XCTAssertFalse(Self.matches(#"{"token":"pst_12","user":"bob"}"#, #"{"token":"pst_…","user":"alice"}"#))
        XCTAssertFalse(Self.matches("a\nb", "a"))
    }
}
