import Foundation
import XCTest

/// Replays every Protocol/transcripts/*.txt against a fresh live server.
///
/// Format: `U: user password` creates an account before the server starts; `C:` / `CN:` sends a
/// line on connection 1 / N; `S:` / `SN:` reads the next line there and matches it. In `S` lines
/// `<?>` matches one word and `<$name>` captures one; in `C` lines `<$name>` is replaced.
final class TranscriptTests: XCTestCase {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/transcripts")

    func testEveryTranscriptReplays() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".txt") }.sorted()
        XCTAssertGreaterThanOrEqual(files.count, 7)
        for file in files {
            try replay(Self.folder.appendingPathComponent(file))
        }
    }

    /// The same transcripts on a server whose store is PostgreSQL: the two stores answer alike.
    func testEveryTranscriptReplaysOnPostgreSQL() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".txt") }.sorted()
        for file in files {
            try replay(Self.folder.appendingPathComponent(file), serverArguments: ["--store", try TestPostgres.freshDatabase()])
        }
    }

    func testEveryVerbHasATranscript() throws {
        let text = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path)
            .map { try String(contentsOf: Self.folder.appendingPathComponent($0), encoding: .utf8) }.joined()
        for verb in ["HELLO", "AUTH", "TOKEN NEW", "TOKEN LIST", "TOKEN REVOKE", "CREATE", "DROP", "RENAME", "COLLECTIONS", "GRANT", "PUT", "MOVE", "DEL",
                     "GET", "LIST", "SUB", "UNSUB", "PING", "STATS", "QUIT"] {
            XCTAssertTrue(text.contains(" \(verb) "), "no transcript uses \(verb)")
        }
    }

    private func replay(_ url: URL, serverArguments: [String] = []) throws {
        let name = url.lastPathComponent
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let server = try TestServer(extraArguments: serverArguments)
        for line in lines where line.hasPrefix("U: ") {
            let words = line.dropFirst(3).split(separator: " ").map(String.init)
            try server.addUser(words[0], password: words[1], admin: words.count > 2)
        }
        try server.start()
        var clients: [Int: LineClient] = [:]
        var captures: [String: String] = [:]
        for (number, line) in lines.enumerated() where !line.hasPrefix("#") && !line.hasPrefix("U: ") {
            guard let colon = line.firstIndex(of: ":") else {
                XCTFail("\(name):\(number + 1): no direction")
                continue
            }
            let direction = line[..<colon]
            let text = String(line[line.index(colon, offsetBy: 2)...])
            let index = Int(direction.dropFirst()) ?? 1
            if clients[index] == nil { clients[index] = try server.connect() }
            let client = clients[index]!
            if direction.hasPrefix("C") {
                var request = text
                for (key, value) in captures { request = request.replacingOccurrences(of: "<$\(key)>", with: value) }
                try client.send(request)
            } else {
                let reply = try client.readLine() ?? "<closed>"
                guard Self.match(expected: text, actual: reply, captures: &captures) else {
                    XCTFail("\(name):\(number + 1): expected \(text)\n   got \(reply)")
                    return
                }
            }
        }
    }

    /// Word-by-word match of `actual` against `expected` with `<?>` and `<$name>` holes.
    static func match(expected: String, actual: String, captures: inout [String: String]) -> Bool {
        var pattern = "^"
        var names: [String] = []
        let holes = try! NSRegularExpression(pattern: #"<\?>|<\$([A-Za-z0-9_]+)>"#)
        var cursor = expected.startIndex
        for hole in holes.matches(in: expected, range: NSRange(expected.startIndex..., in: expected)) {
            let range = Range(hole.range, in: expected)!
            pattern += NSRegularExpression.escapedPattern(for: String(expected[cursor..<range.lowerBound]))
            if let nameRange = Range(hole.range(at: 1), in: expected) {
                names.append(String(expected[nameRange]))
                pattern += "([^ ]+)"
            } else {
                pattern += "[^ ]+"
            }
            cursor = range.upperBound
        }
        pattern += NSRegularExpression.escapedPattern(for: String(expected[cursor...])) + "$"
        guard let regex = try? NSRegularExpression(pattern: pattern),
            let found = regex.firstMatch(in: actual, range: NSRange(actual.startIndex..., in: actual))
        else { return false }
        for (offset, name) in names.enumerated() {
            captures[name] = String(actual[Range(found.range(at: offset + 1), in: actual)!])
        }
        return true
    }
}
