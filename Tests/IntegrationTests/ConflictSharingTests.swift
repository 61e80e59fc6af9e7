import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Issue 9, item 13: a conflict copy reaches every mirror of the collection, `plistsync
/// conflicts` lists it (from a folder or from the server), `resolve` settles it everywhere, and
/// `versions`/`restore` bring back what a remote change replaced.
final class ConflictSharingTests: TwoAgentTestCase {
    override var password: String { "wonderland" }
    private var passwordFile: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        passwordFile = NSTemporaryDirectory() + "plistsync-conflicts-\(UUID().uuidString)"
        try "wonderland\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        super.tearDown()
        try? FileManager.default.removeItem(atPath: passwordFile)
    }

    /// The server's phone for Ada, read with a GET.
    private func serverPhone() -> Value? {
        guard let client = try? server.login("alice", "wonderland"), (try? client.send("g GET contacts Ada")) != nil,
            let line = try? client.readLine(), let parsed = try? ServerLine.parse(Array(line.utf8))
        else { return nil }
        return parsed.payload?["phone"]
    }

    private let ada: Fields = ["name": .string("Ada Lovelace"), "phone": .string("555-0100")]

    /// Both machines change Ada's phone while apart; A comes back first, so B's value loses.
    private func makeConflict() throws -> String {
        try a.start()
        try b.start()
        try a.save("contacts", "Ada", ada)
        eventually { b.fields("contacts", "Ada") == ada }
        a.stop()
        b.stop()
        try a.save("contacts", "Ada", ["name": .string("Ada Lovelace"), "phone": .string("from laptop")])
        try b.save("contacts", "Ada", ["name": .string("Ada Lovelace"), "phone": .string("from desktop")])
        try a.start()
        eventually { serverPhone() == .string("from laptop") }
        try b.start()
        eventually(10, "A \(a.conflictCopies("contacts")) B \(b.conflictCopies("contacts"))\n\(b.log())") {
            a.conflictCopies("contacts").count == 1 && a.conflictCopies("contacts") == b.conflictCopies("contacts")
        }
        return a.conflictCopies("contacts")[0]
    }

    func testAConflictCopyReachesEveryMirrorAndResolvingItClearsItEverywhere() throws {
        let copy = try makeConflict()
        XCTAssertTrue(copy.hasPrefix("Ada.sync-conflict-") && copy.hasSuffix("-desktop.plist"), copy)
        let onA = try PlistFile.decodeRecord(Array(FileManager.default.contents(atPath: "\(a.directory)/contacts/\(copy)")!)).0
        XCTAssertEqual(onA["phone"], .string("from desktop"), "the losing value is on the winner's machine too")
        eventually { a.statusText().contains(copy) }

        let (listed, local, _) = PlistSyncCommand.run(["conflicts", "--dir", a.directory])
        XCTAssertEqual(listed, 0)
        XCTAssertTrue(local.contains("contacts/Ada  ") && local.contains("  desktop  ") && local.contains(copy), local)
        let (code, remote, error) = PlistSyncCommand.run(
            ["conflicts", "--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", passwordFile])
        XCTAssertEqual(code, 0, error)
        XCTAssertEqual(remote, "contacts/\(String(copy.dropLast(6)))\n")

        // On the laptop, keep the desktop's version: the record takes it, the copy goes everywhere.
        let (resolved, out, resolveError) = PlistSyncCommand.run(["resolve", "contacts/Ada", "--keep", "mine", "--dir", a.directory])
        XCTAssertEqual(resolved, 0, resolveError)
        XCTAssertTrue(out.contains("1 conflict copy removed"), out)
        eventually(10, b.log()) {
            b.fields("contacts", "Ada")?["phone"] == .string("from desktop") && b.conflictCopies("contacts").isEmpty
                && a.conflictCopies("contacts").isEmpty
        }
        XCTAssertEqual(serverPhone(), .string("from desktop"))
        let (_, after, _) = PlistSyncCommand.run(
            ["conflicts", "--server", "127.0.0.1:\(server.port)", "--user", "alice", "--password-file", passwordFile])
        XCTAssertEqual(after, "")
    }

    func testResolveRefusesWhatItCannotDoAndTheirsKeepsTheRecord() throws {
        let copy = try makeConflict()
        let (none, _, noneError) = PlistSyncCommand.run(["resolve", "contacts/Bob", "--keep", "theirs", "--dir", b.directory])
        XCTAssertEqual(none, 1)
        XCTAssertTrue(noneError.contains("no conflict copies"), noneError)
        let broken = b.directory + "/broken.txt"
        try "not a plist".write(toFile: broken, atomically: true, encoding: .utf8)
        let (bad, _, badError) = PlistSyncCommand.run(["resolve", "contacts/Ada", "--keep", broken, "--dir", b.directory])
        XCTAssertEqual(bad, 1)
        XCTAssertTrue(badError.contains("not a record"), badError)
        XCTAssertEqual(b.conflictCopies("contacts"), [copy], "a refused resolve changes nothing")
        let (code, _, error) = PlistSyncCommand.run(["resolve", "contacts/Ada", "--keep", "theirs", "--dir", b.directory])
        XCTAssertEqual(code, 0, error)
        eventually { a.conflictCopies("contacts").isEmpty && b.conflictCopies("contacts").isEmpty }
        XCTAssertEqual(a.fields("contacts", "Ada")?["phone"], .string("from laptop"))
        XCTAssertEqual(b.fields("contacts", "Ada")?["phone"], .string("from laptop"))
    }

    func testVersionsListsWhatARemoteChangeReplacedAndRestoreBringsItBack() throws {
        try a.start()
        try b.start()
        try a.save("contacts", "Ada", ada)
        eventually { b.fields("contacts", "Ada") == ada }
        let edited: Fields = ["name": .string("Ada Lovelace"), "phone": .string("555-0199")]
        try a.save("contacts", "Ada", edited)
        eventually { b.fields("contacts", "Ada") == edited }
        let (code, out, _) = PlistSyncCommand.run(["versions", "contacts/Ada", "--dir", b.directory])
        XCTAssertEqual(code, 0)
        let lines = out.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, out)
        let stamp = String(lines[0].split(separator: " ")[0])
        let (restored, restoreOut, restoreError) = PlistSyncCommand.run(["restore", "contacts/Ada", stamp, "--dir", b.directory])
        XCTAssertEqual(restored, 0, restoreError)
        XCTAssertTrue(restoreOut.contains("restored contacts/Ada from \(stamp)"), restoreOut)
        eventually(10, a.log()) { a.fields("contacts", "Ada") == ada }
        let (_, again, _) = PlistSyncCommand.run(["versions", "contacts/Ada", "--dir", b.directory])
        XCTAssertEqual(again.split(separator: "\n").count, 2, "the replaced file is kept too: \(again)")
        let (missing, _, missingError) = PlistSyncCommand.run(["restore", "contacts/Ada", "19990101-000000", "--dir", b.directory])
        XCTAssertEqual(missing, 1)
        XCTAssertTrue(missingError.contains("no kept version 19990101-000000"), missingError)
    }

    /// A merge of a local edit with a remote change that removed a field writes the file
    /// without that field: the file as it was is kept first, as for any remote change (the
    /// chaos test lost typed values when the last copy of one went in a merge).
    func testAMergeThatDropsAFieldKeepsTheFileAsItWas() throws {
        try a.start()
        try a.save("contacts", "Ada", ["name": .string("Ada"), "note": .string("typed on the laptop")])
        let alice = try server.login("alice", "wonderland")
        var rev = ""
        eventually(10, a.log()) {
            guard (try? alice.send("g GET contacts Ada")) != nil, let line = try? alice.readLine() else { return false }
            rev = line.split(separator: " ").dropFirst(5).first.map(String.init) ?? ""
            return line.hasPrefix("g OK GET contacts Ada ")
        }
        a.stop()
        // Elsewhere the note is removed; here, meanwhile, a phone is added to the old file.
        _ = try alice.expect(#"p PUT contacts Ada \#(rev) {"name":"Ada"}"#, prefix: "p OK PUT contacts Ada ")
        try a.save("contacts", "Ada", ["name": .string("Ada"), "note": .string("typed on the laptop"), "phone": .string("555-0100")])
        try a.start()
        eventually(10, a.log()) { a.fields("contacts", "Ada") == ["name": .string("Ada"), "phone": .string("555-0100")] }
        let folder = a.directory + "/.plistsync/versions/contacts"
        let kept = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).compactMap { FileManager.default.contents(atPath: folder + "/" + $0) }
        XCTAssertTrue(kept.contains { String(decoding: $0, as: UTF8.self).contains("typed on the laptop") }, "kept: \(kept.count) files")
    }
}
