import Foundation
import XCTest

/// A connection a transcript is replayed on: a socket to a live server, or a session's buffers.
protocol TranscriptConnection {
    func send(_ line: String) throws
    /// The next line; nil once the server closed the connection.
    func readLine() throws -> String?
}

extension LineClient: TranscriptConnection {
    func readLine() throws -> String? { try readLine(timeout: nil) }
}

/// Replays every Protocol/transcripts/*.txt against a fresh server: a live one over TCP (on
/// SQLite and on PostgreSQL), and one whose sessions run in memory, with no socket.
///
/// Format: `U: user password` creates an account before the server starts; `C:` / `CN:` sends a
/// line on connection 1 / N; `S:` / `SN:` reads the next line there and matches it. In `S` lines
/// `<?>` matches one word and `<$name>` captures one; in `C` lines `<$name>` is replaced.
final class TranscriptTests: XCTestCase {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/transcripts")

    private static func transcripts() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".txt") }.sorted().map { folder.appendingPathComponent($0) }
    }

    func testEveryTranscriptReplays() throws {
        let files = try Self.transcripts()
        XCTAssertGreaterThanOrEqual(files.count, 7)
        for file in files {
            try replay(file) { users in try Self.liveServer(users: users, arguments: []) }
        }
    }

    /// The same transcripts on a server whose store is PostgreSQL: the two stores answer alike.
    func testEveryTranscriptReplaysOnPostgreSQL() throws {
        for file in try Self.transcripts() {
            let database = try TestPostgres.freshDatabase()
            try replay(file) { users in try Self.liveServer(users: users, arguments: ["--store", database]) }
        }
    }

    /// The same transcripts fed straight into sessions, no socket anywhere: the protocol is the
    /// session's, and the TCP layer only carries bytes.
    func testEveryTranscriptReplaysInMemory() throws {
        for file in try Self.transcripts() {
            var server: InMemoryServer?
            try replay(file) { users in
                let memory = try InMemoryServer(users: users) { $0.invitationsMakeAccounts = true }
                server = memory
                return { memory.connect() }
            }
            withExtendedLifetime(server) {}
        }
    }

    private static func liveServer(users: [(name: String, password: String, admin: Bool)], arguments: [String]) throws -> () throws -> TranscriptConnection {
        // Every replaced state is kept (transcript 04 lists versions made a moment apart).
        let server = try TestServer(extraArguments: arguments + ["--invitations-make-accounts"])
        for user in users { try server.addUser(user.name, password: user.password, admin: user.admin) }
        try server.start()
        return { try server.connect() }
    }

    func testEveryVerbHasATranscript() throws {
        let text = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path)
            .map { try String(contentsOf: Self.folder.appendingPathComponent($0), encoding: .utf8) }.joined()
        for verb in ["HELLO", "AUTH", "TOKEN NEW", "TOKEN LIST", "TOKEN REVOKE", "CREATE", "DROP", "RENAME", "COLLECTIONS", "GRANT", "PUT", "MOVE", "DEL",
                     "GET", "LIST", "SUB", "UNSUB", "PING", "STATS", "QUIT",
                     "USER ADD", "USER LIST", "USER PASSWD", "USER REMOVE", "USER ADMIN", "PASSWD",
                     "INVITE NEW", "INVITE LIST", "INVITE REVOKE", "INVITE PEEK", "REDEEM", "LOG", "REVERT"] {
            XCTAssertTrue(text.contains(" \(verb) "), "no transcript uses \(verb)")
        }
    }

    /// `start`: makes the server with the transcript's accounts; gives a way to connect to it.
    private func replay(_ url: URL, start: ([(name: String, password: String, admin: Bool)]) throws -> () throws -> TranscriptConnection) throws {
        let name = url.lastPathComponent
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let users = lines.filter { $0.hasPrefix("U: ") }.map { line in
            let words = line.dropFirst(3).split(separator: " ").map(String.init)
            return (name: words[0], password: words[1], admin: words.count > 2)
        }
        let connect = try start(users)
        var clients: [Int: TranscriptConnection] = [:]
        var captures: [String: String] = [:]
        for (number, line) in lines.enumerated() where !line.hasPrefix("#") && !line.hasPrefix("U: ") {
            guard let colon = line.firstIndex(of: ":") else {
                XCTFail("\(name):\(number + 1): no direction")
                continue
            }
            let direction = line[..<colon]
            let text = String(line[line.index(colon, offsetBy: 2)...])
            let index = Int(direction.dropFirst()) ?? 1
            if clients[index] == nil { clients[index] = try connect() }
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
