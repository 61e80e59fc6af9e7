import Foundation
import XCTest

/// Issue 47 against a real server process: a REVERT killed part-way (kill -9) is finished by
/// running it again, never doubled or lost; a backup taken at a seq and LIST AT that seq agree
/// record by record.
final class ChangeLogTests: XCTestCase {
    /// `LIST` or `LIST AT` as (id, position, fields) lines, the revs left out (a revert writes
    /// new ones), and the seq of the OK line.
    private func listing(_ client: TranscriptConnection, _ request: String, keepRevs: Bool = false) throws -> (records: [String], seq: String) {
        try client.send(request)
        var records: [String] = []
        while true {
            let line = try client.line()
            if line.hasPrefix("* RECORD ") {
                var words = line.split(separator: " ", maxSplits: 5).map(String.init)
                if !keepRevs { words.remove(at: 4) }
                records.append(words.dropFirst(2).joined(separator: " "))
                continue
            }
            XCTAssertTrue(line.contains(" OK LIST "), line)
            return (records, String(line.split(separator: " ").last ?? ""))
        }
    }

    /// Reads lines until the reply tagged `tag`; returns it.
    private func reply(_ client: TranscriptConnection, _ tag: String) throws -> String {
        while true {
            let line = try client.line()
            if line.hasPrefix(tag + " ") { return line }
        }
    }

    /// A REVERT of more writes than one commit takes (4,096) lands in several; killed between
    /// them, it has written part of its records. Each round the device adds 5,000 more notes,
    /// the revert starts and the server is killed (kill -9) a moment after its planning; the
    /// next dry run tells whether none, part or all of it landed, and the moment moves until
    /// kills land part-way. Run again, the revert finishes: the notes are as they were, none
    /// doubled or lost.
    func testARevertKilledPartWayIsFinishedByRunningItAgain() throws {
        let server = try TestServer.running()
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE notes", equals: "c OK CREATE notes")
        let count = 300
        for index in 0..<count { try alice.send(#"p\#(index) PUT notes n\#(index) 0 {"text":"good \#(index)"}"#) }
        _ = try reply(alice, "p\(count - 1)")
        let good = try listing(alice, "l LIST notes")
        XCTAssertEqual(good.records.count, count)

        // A device gone wrong: rewrites the notes, deletes some, adds junk every round.
        let token = try alice.expect("t TOKEN NEW vandal", prefix: "t OK TOKEN ").split(separator: " ")[3]
        var vandal = try server.connect()
        try vandal.expect("a AUTH TOKEN \(token)", equals: "a OK AUTH alice")
        for index in 0..<count {
            if index % 10 == 0 { try vandal.send("d\(index) DEL notes n\(index) 1") } else { try vandal.send(#"v\#(index) PUT notes n\#(index) 1 {"text":"junk"}"#) }
        }
        _ = try reply(vandal, "v\(count - 1)")
        let device = try vandal.expect("w TOKEN LIST", prefix: "* TOKEN ").split(separator: " ")[2]

        var outcomes: [String] = []
        var partWay = 0
        // How far past planning the kill comes, in seconds: later after a kill that came before
        // any write, sooner after one that came once all were done.
        var pastPlanning = 0.03
        for round in 0..<16 where outcomes.count < 6 || partWay == 0 {
            for index in 0..<5_000 { try vandal.send(#"j\#(index) PUT notes junk-\#(round)-\#(index) 0 {"text":"spam"}"#) }
            _ = try reply(vandal, "j4999")
            let admin = try server.login("alice", "pw")
            // The dry run takes what the revert's planning takes; its writes come after that.
            let started = Date()
            let expected = try written(admin, "y REVERT notes TO \(good.seq) DEVICE \(device) DRY-RUN")
            let planning = Date().timeIntervalSince(started)
            try admin.send("r REVERT notes TO \(good.seq) DEVICE \(device)")
            usleep(UInt32(1_000_000 * (planning + pastPlanning)))
            _ = server.stop(signal: SIGKILL)
            try server.start()
            let left = try written(try server.login("alice", "pw"), "z REVERT notes TO \(good.seq) DEVICE \(device) DRY-RUN")
            if left == expected {
                outcomes.append("before")
                pastPlanning *= 1.6
            } else if left == 0 {
                outcomes.append("done")
                pastPlanning *= 0.6
            } else {
                outcomes.append("part-way (\(expected - left) of \(expected))")
                partWay += 1
            }
            vandal = try server.connect()
            try vandal.expect("a AUTH TOKEN \(token)", equals: "a OK AUTH alice")
        }
        let finisher = try server.login("alice", "pw")
        XCTAssertGreaterThan(partWay, 0, "no kill landed between a revert's commits: \(outcomes)")
        XCTAssertGreaterThanOrEqual(try written(finisher, "r REVERT notes TO \(good.seq) DEVICE \(device)"), 0)
        XCTAssertEqual(try written(finisher, "r2 REVERT notes TO \(good.seq) DEVICE \(device)"), 0, "done: another run writes nothing")
        let after = try listing(finisher, "l LIST notes")
        XCTAssertEqual(after.records.count, count)
        XCTAssertEqual(after.records, good.records, "every note back, in its place, the junk gone")
        XCTAssertEqual(try listing(finisher, "a LIST notes AT \(good.seq)").records, good.records)
        print("revert under kill -9: \(outcomes.joined(separator: ", "))")
    }

    /// The records a REVERT wrote (or would write), from its OK.
    private func written(_ client: TranscriptConnection, _ request: String) throws -> Int {
        try client.send(request)
        let tag = String(request.prefix { $0 != " " })
        let line = try reply(client, tag)
        let words = line.split(separator: " ")
        guard words.count >= 6, words[1] == "OK", let count = Int(words[4]) else {
            XCTFail("\(request): \(line)")
            return -1
        }
        return count
    }

    func testABackupTakenAtASeqAndListAtThatSeqAgreeRecordByRecord() throws {
        let server = try LiveServer.running()
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE inventory", equals: "c OK CREATE inventory")
        for index in 0..<50 { try alice.expect(#"p PUT inventory i\#(index) 0 {"n":\#(index)}"#, prefix: "p OK PUT") }
        try alice.expect("m MOVE inventory i7 1 FIRST", prefix: "m OK MOVE")
        try alice.expect("d DEL inventory i3 1", prefix: "d OK DEL")
        let scratch = NSTemporaryDirectory() + "plistsync-logbackup-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let (code, _, error) = PlistSyncCommand.run(["backup", scratch + "/store.backup", "--data", server.dataPath])
        XCTAssertEqual(code, 0, error)
        let atBackup = try listing(alice, "l LIST inventory", keepRevs: true)

        // After the backup: edits, deletes, a move, new records, a re-created one.
        for index in stride(from: 0, to: 50, by: 3) where index != 3 {
            try alice.expect(#"e PUT inventory i\#(index) \#(index == 7 ? 2 : 1) {"n":"edited"}"#, prefix: "e OK PUT")
        }
        try alice.expect("d DEL inventory i10 1", prefix: "d OK DEL")
        try alice.expect("m MOVE inventory i11 1 FIRST", prefix: "m OK MOVE")
        try alice.expect(#"p PUT inventory i3 2 {"n":"back"}"#, prefix: "p OK PUT")
        try alice.expect(#"p PUT inventory new 0 {"n":"new"}"#, prefix: "p OK PUT")

        let rebuilt = try listing(alice, "a LIST inventory AT \(atBackup.seq)", keepRevs: true)
        XCTAssertEqual(rebuilt.seq, atBackup.seq)

        // Paged, with records added between the pages: the pages are of the one list at the seq.
        var paged: [String] = []
        var after = ""
        for page in 0..<20 {
            let part = try listing(alice, "pg LIST inventory AT \(atBackup.seq)\(after) LIMIT 7", keepRevs: true)
            XCTAssertEqual(part.seq, atBackup.seq)
            paged += part.records
            guard let last = part.records.last, part.records.count == 7 else { break }
            let words = last.split(separator: " ")  // collection id rev position fields
            after = " AFTER \(words[3]) \(words[1])"
            try alice.expect(#"x PUT inventory between\#(page) 0 {"n":0}"#, prefix: "x OK PUT")
        }
        XCTAssertEqual(paged, atBackup.records, "no record twice, none missed, none added since")
        server.stop()
        let copy = scratch + "/restored"
        let restored = PlistSyncCommand.run(["restore", scratch + "/store.backup", "--data", copy])
        XCTAssertEqual(restored.0, 0, restored.2)
        let fromBackup = try LiveServer(dataPath: copy)
        try fromBackup.start()
        defer { fromBackup.stop() }
        let backupListing = try listing(try fromBackup.login("alice", "pw"), "l LIST inventory", keepRevs: true)
        XCTAssertEqual(backupListing.records.count, 49)
        XCTAssertEqual(rebuilt.records, backupListing.records, "id, rev, position and fields, record by record")
        XCTAssertEqual(rebuilt.records, atBackup.records)
    }

    /// `plistsync log` and `plistsync revert` over the wire: who changed what as a table and as
    /// JSON; a dry run writes nothing; the revert names what someone else changed since.
    func testTheLogAndRevertCommands() throws {
        let server = try LiveServer.running(users: [("alice", "pw"), ("bob", "pw")])
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE notes", equals: "c OK CREATE notes")
        try alice.expect("g GRANT notes bob write", equals: "g OK GRANT")
        try alice.expect(#"p PUT notes a 0 {"t":"one"}"#, prefix: "p OK PUT notes a 1 1")
        let bob = try server.login("bob", "pw")
        try bob.expect(#"p PUT notes a 1 {"t":"bob's"}"#, prefix: "p OK PUT notes a 2 2")
        try bob.expect(#"p PUT notes b 0 {"t":"new"}"#, prefix: "p OK PUT notes b 1 3")
        let passwordFile = NSTemporaryDirectory() + "plistsync-log-" + UUID().uuidString
        try "pw\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: passwordFile) }
        let client = ["--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", passwordFile]

        let table = PlistSyncCommand.run(["log", "notes"] + client)
        XCTAssertEqual(table.0, 0, table.2)
        let rows = table.1.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        XCTAssertEqual(rows.first?.prefix(3), ["SEQ", "TIME", "USER"])
        XCTAssertEqual(rows.dropFirst().map { [$0[0], $0[2], $0[3], $0[4], $0[5]] }, [["1", "alice", "password", "line", "a"], ["2", "bob", "password", "line", "a"],
                                                                                    ["3", "bob", "password", "line", "b"]])
        let json = PlistSyncCommand.run(["log", "notes", "--by", "bob", "--limit", "1", "--json"] + client)
        XCTAssertEqual(json.0, 0, json.2)
        XCTAssertTrue(json.1.contains(#""id":"b""#) && json.1.contains(#""user":"bob""#) && !json.1.contains(#""id":"a""#), json.1)

        let dry = PlistSyncCommand.run(["revert", "notes", "--to", "1", "--by", "bob", "--dry-run"] + client)
        XCTAssertEqual(dry.0, 0, dry.2)
        XCTAssertTrue(dry.1.contains("would write 2 record(s)"), dry.1)
        try alice.expect("g GET notes b", prefix: "g OK GET notes b 1 ")
        let done = PlistSyncCommand.run(["revert", "notes", "--to", "1", "--by", "bob"] + client)
        XCTAssertEqual(done.0, 0, done.2)
        XCTAssertTrue(done.1.contains("wrote 2 record(s)"), done.1)
        try alice.expect("g GET notes a", equals: #"g OK GET notes a 3 a0 {"t":"one"}"#)
        try alice.expect("g GET notes b", equals: "g OK GET notes b 2 - DELETED")
        let refused = PlistSyncCommand.run(["revert", "notes", "--to", "1", "--by", "bob", "--device", "password"] + client)
        XCTAssertNotEqual(refused.0, 0)
        XCTAssertTrue(refused.2.contains("--by and --device cannot be given together"), refused.2)
    }
}
