import Foundation
import SQLiteKit
import SQLiteStore
import XCTest

/// Issue 31: the write path's durability promise under the new byte path. Four connections
/// pipeline PUTs into a group commit while the server is killed with SIGKILL at a random
/// moment, 50 times over one data folder: every write answered OK is there after the restart,
/// and a write that got no answer is there whole or not at all.
///
/// Issue 47: an edit's row is written behind its logged change, so most kills come while rows
/// lag the log (counted from the file after each kill); the restart writes them.
final class MidBatchKillTests: XCTestCase {
    private static let writers = 4
    private static let idsPerWriter = 8

    /// What the test knows of one record: the rev and value the server last confirmed, and the
    /// write sent after it that got no answer (the kill came first).
    private struct Known {
        var rev: Int64 = 0
        var value: String?
        var unanswered: String?
    }

    func testKillingTheServerMidBatch50TimesLosesNoAcknowledgedWrite() throws {
        let server = try TestServer.running()
        let setup = try server.login("alice", "pw")
        try setup.expect("c CREATE durable", equals: "c OK CREATE durable")
        var known: [String: Known] = [:]
        var generator = SystemRandomNumberGenerator()
        var acknowledged = 0
        var unansweredCommitted = 0
        var killedWhileRowsLagged = 0
        for round in 0..<50 {
            if round > 0 {
                try server.start()
                try check(&known, on: server.login("alice", "pw"), round: round, committedUnanswered: &unansweredCommitted)
            }
            let connections = try (0..<Self.writers).map { _ in try server.login("alice", "pw") }
            let killAfter = Double.random(in: 0.01...0.08, using: &generator)
            let pid = server.pid
            DispatchQueue.global().asyncAfter(deadline: .now() + killAfter) { kill(pid, SIGKILL) }
            var serial = 0
            writing: while true {
                var sent: [[(tag: String, id: String, value: String)]] = []
                for (writer, connection) in connections.enumerated() {
                    var window: [(tag: String, id: String, value: String)] = []
                    for index in 0..<Self.idsPerWriter {
                        let id = "w\(writer)r\(index)"
                        serial += 1
                        let value = "round \(round) write \(serial)"
                        let tag = "p\(serial)"
                        window.append((tag, id, value))
                        known[id, default: Known()].unanswered = value
                        guard (try? connection.send(#"\#(tag) PUT durable \#(id) \#(known[id]!.rev) {"v":"\#(value)"}"#)) != nil else { break writing }
                    }
                    sent.append(window)
                }
                for (connection, window) in zip(connections, sent) {
                    for write in window {
                        guard let reply = try? connection.readLine(timeout: 5) else { break writing }
                        let words = reply.split(separator: " ")
                        // p1 OK PUT durable <id> <rev> <seq>
                        guard words.count == 7, words[0] == write.tag, words[1] == "OK" else {
                            XCTFail("round \(round): \(write.tag) answered \(reply)")
                            break writing
                        }
                        known[write.id] = Known(rev: Int64(words[5])!, value: write.value, unanswered: nil)
                        acknowledged += 1
                    }
                }
            }
            _ = server.stop(signal: SIGKILL)
            if try rowsLagTheLog(in: server.dataPath) { killedWhileRowsLagged += 1 }
        }
        try server.start()
        try check(&known, on: server.login("alice", "pw"), round: 50, committedUnanswered: &unansweredCommitted)
        XCTAssertGreaterThan(acknowledged, 50 * Self.writers, "the writers got answers between the kills")
        XCTAssertGreaterThanOrEqual(killedWhileRowsLagged, 25, "most kills came while edits waited for their rows")
        print("mid-batch kills: 50 kills (\(killedWhileRowsLagged) while rows lagged the log), \(acknowledged) writes acknowledged, "
              + "\(unansweredCommitted) unanswered writes found committed")
    }

    /// Whether the killed server's store holds logged changes past `applied_seq` (rows behind).
    private func rowsLagTheLog(in dataPath: String) throws -> Bool {
        let db = try SQLiteDatabase(path: DataFolder(path: dataPath).storePath)
        let applied = try db.queryFirst("SELECT value FROM meta WHERE key = 'applied_seq'") { $0.integer(0) } ?? 0
        let behind = try db.queryFirst("SELECT count(*) FROM changes WHERE seq > ?", .integer(applied)) { $0.integer(0) } ?? 0
        return behind > 0
    }

    /// Every record holds what was last confirmed, or the one write sent after it whole (which
    /// then counts as confirmed).
    private func check(_ known: inout [String: Known], on client: LineClient, round: Int, committedUnanswered: inout Int) throws {
        for (id, record) in known.sorted(by: { $0.key < $1.key }) {
            try client.send("g GET durable \(id)")
            let reply = try client.line()
            if record.rev == 0, reply.hasPrefix("g ERR NOT_FOUND") {
                known[id]!.unanswered = nil
                continue
            }
            // g OK GET durable <id> <rev> <position> {"v":"..."}
            let words = reply.split(separator: " ", maxSplits: 7)
            guard words.count == 8, words[1] == "OK", let rev = Int64(words[5]) else {
                XCTFail("round \(round): \(id) read back as \(reply)")
                continue
            }
            let value = String(words[7])
            if rev == record.rev, let confirmed = record.value {
                XCTAssertEqual(value, #"{"v":"\#(confirmed)"}"#, "round \(round): \(id) lost its acknowledged write")
            } else if rev == record.rev + 1, let unanswered = record.unanswered {
                XCTAssertEqual(value, #"{"v":"\#(unanswered)"}"#, "round \(round): \(id) holds a write nobody sent")
                committedUnanswered += 1
                known[id] = Known(rev: rev, value: unanswered, unanswered: nil)
                continue
            } else {
                XCTFail("round \(round): \(id) is at rev \(rev); the last acknowledged was \(record.rev)")
            }
            known[id]!.unanswered = nil
        }
    }
}
