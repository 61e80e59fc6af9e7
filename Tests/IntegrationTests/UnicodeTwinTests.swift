import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Issue 18, item 5: two files whose names differ only in Unicode normalisation (`Zoë` as one
/// precomposed scalar, and as `e` plus a combining diaeresis) are two files on Linux and two
/// records on the server. Swift's `String` equality calls them equal; the agent must not.
final class UnicodeTwinTests: TwoAgentTestCase {
    let composed = "Zo\u{00EB}"
    let decomposed = "Zoe\u{0308}"

    /// The record files of `collection` by their exact names (bytes), parsed.
    private func twinFiles(_ agent: MirrorView, _ collection: String) -> [[UInt8]: Fields] {
        var result: [[UInt8]: Fields] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "\(agent.directory)/\(collection)")) ?? []
        where name.hasSuffix(".plist") && !name.hasPrefix(".") {
            let data = FileManager.default.contents(atPath: "\(agent.directory)/\(collection)/\(name)") ?? Data()
            result[Array(name.utf8)] = (try? PlistFile.decodeRecord(Array(data)).0) ?? ["<unparseable>": .bool(true)]
        }
        return result
    }

    private func expected(_ twins: [(String, Fields)]) -> [[UInt8]: Fields] {
        Dictionary(uniqueKeysWithValues: twins.map { (Array(($0.0 + ".plist").utf8), $0.1) })
    }

    func testTwoIDsThatDifferOnlyInNormalisationAreTwoRecordsEverywhere() throws {
        XCTAssertNotEqual(Array(composed.utf8), Array(decomposed.utf8))
        try a.save("people", composed, ["form": .string("composed")])
        try a.save("people", decomposed, ["form": .string("decomposed")])
        XCTAssertEqual(twinFiles(a, "people").count, 2, "the file system holds both")
        try a.start()
        try b.start()
        var want = expected([(composed, ["form": .string("composed")]), (decomposed, ["form": .string("decomposed")])])
        eventually(15, "b: \(twinFiles(b, "people").keys.map { String(decoding: $0, as: UTF8.self).unicodeScalars.map(\.value) })\n\(a.log())\n\(b.log())") {
            twinFiles(b, "people") == want
        }
        // An edit of one twin reaches that twin only.
        try b.save("people", decomposed, ["form": .string("decomposed, edited on b")])
        want = expected([(composed, ["form": .string("composed")]), (decomposed, ["form": .string("decomposed, edited on b")])])
        eventually(15, "a: \(twinFiles(a, "people"))\n\(a.log())") { twinFiles(a, "people") == want }
        // The version the change replaced on a is that twin's, listed under that twin only.
        let (status, kept, err) = PlistSyncCommand.run(["versions", "people/\(decomposed)", "--dir", a.directory])
        XCTAssertEqual(status, 0, err)
        XCTAssertEqual(kept.split(separator: "\n").count, 1, kept)
        let (_, none, _) = PlistSyncCommand.run(["versions", "people/\(composed)", "--dir", a.directory])
        XCTAssertEqual(none.split(separator: "\n").filter { $0.contains(".plist") }.count, 0, none)
        // A delete of one twin deletes that twin only.
        XCTAssertEqual(unlink(a.path("people", composed)), 0)
        want = expected([(decomposed, ["form": .string("decomposed, edited on b")])])
        eventually(15, "b: \(twinFiles(b, "people"))\n\(b.log())") { twinFiles(b, "people") == want }
        let alice = try server.login("alice", "pw")
        try alice.send("l LIST people")
        var listed: [String] = []
        while let line = try alice.readLine(), !line.hasPrefix("l ") { listed.append(line) }
        XCTAssertEqual(listed.count, 1, "\(listed)")
        XCTAssertTrue(listed.first.map { Array($0.utf8).starts(with: Array("* RECORD people \(decomposed) ".utf8)) } ?? false, "\(listed)")
        XCTAssertTrue(a.isRunning && b.isRunning)
    }
}
