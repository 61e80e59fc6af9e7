import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Issue 18: every shell example in README.md runs as written, in order, as a newcomer would
/// type them on a fresh clone (a home folder of its own, the quick start's server on
/// 127.0.0.1:7420, the test's build standing in for the release binary), and does what the
/// text says.
final class ReadmeTests: XCTestCase {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private var root: String!

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "plistsync-readme-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        // README_KEEP=1 keeps the folder (the script, its logs, the home folder) to look at.
        guard ProcessInfo.processInfo.environment["README_KEEP"] != "1" else { return print("kept \(root!)") }
        try? FileManager.default.removeItem(atPath: root)
    }

    func testTheMarkersAndContinuationsAreRead() {
        let markdown = "<!-- readme-test: skip needs a host -->\n```sh\nplistsync login --server x \\\n   --user a   # asks\n```\n  ```sh\n  $B ls  # (re)start the agent\n  ```\n"
        let blocks = ReadmeScript.blocks(in: markdown)
        XCTAssertEqual(blocks.map(\.skip), ["needs a host", nil])
        XCTAssertEqual(ReadmeScript.commands(blocks[0].lines).map(\.command), ["plistsync login --server x     --user a"])
        XCTAssertTrue(ReadmeScript.script(for: blocks, prelude: "").hasSuffix("$B ls || readme_failed $? '$B ls'\nreadme_restart agent || readme_failed $? 'restarting the agent'\n\necho; echo 'README: every example ran'\n"))
        XCTAssertEqual(ReadmeScript.steps("$B login --server s --user a")[1], "readme_type_password '$B login --server s --user a' || readme_failed $? '$B login --server s --user a'")
    }

    /// Issue 30: the commands synopsis listed options `logout` rejects. Every option a synopsis
    /// line gives a command is one its `--help` names.
    func testTheSynopsisGivesEachCommandOnlyOptionsItTakes() throws {
        let lines = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8).split(separator: "\n").map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("plistsync serve  [") }),
            let end = lines.firstIndex(where: { $0.hasPrefix("plistsync <command> --help") }) else { return XCTFail("no commands synopsis") }
        var entries: [String] = []
        for line in lines[start..<end] {
            if line.hasPrefix("plistsync ") { entries.append(line) } else if !entries.isEmpty { entries[entries.count - 1] += " " + line }
        }
        // Those that take the client options, or whose synopsis is a list of verbs: `--help` of each is checked elsewhere.
        let verbs: Set<String> = ["ls", "get", "put", "rm", "mv", "watch", "create", "grant", "rename", "drop", "devices"]
        var checked = 0
        for entry in entries {
            let words = entry.split(separator: " ").map(String.init)
            let options = Set(words.flatMap { word in word.split(whereSeparator: { "[]()|".contains($0) }) }.filter { $0.hasPrefix("--") }.map(String.init))
            for command in words[1].split(separator: "|").map(String.init) where !verbs.contains(command) {
                let (_, out, err) = try PlistSyncBinary.run([command, "--help"])
                for option in options { XCTAssertTrue((out + err).contains(option), "README gives `\(command)` \(option); its --help does not name it") }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 15)
    }

    func testEveryShellExampleRunsAsWritten() throws {
        guard Self.portIsFree(7420) else { throw XCTSkip("127.0.0.1:7420 is in use (the README's examples use it): stop that server to run this test") }
        let clone = root + "/clone", home = root + "/home", logs = root + "/logs"
        for folder in [clone + "/.build/release", home + "/Documents", home + "/Sync", logs] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        // The clone: its Deploy scripts, and the binary under test where the release build goes.
        try FileManager.default.copyItem(atPath: Self.repository.appendingPathComponent("Deploy").path, toPath: clone + "/Deploy")
        try FileManager.default.createSymbolicLink(atPath: clone + "/.build/release/plistsync", withDestinationPath: PlistSyncBinary.url.path)
        try writeFixtures(clone: clone, home: home)

        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let prelude = try String(contentsOf: Self.repository.appendingPathComponent("Tests/Readme/prelude.sh"), encoding: .utf8)
        let blocks = ReadmeScript.blocks(in: readme)
        XCTAssertGreaterThanOrEqual(blocks.filter { $0.skip == nil }.count, 5, "the README's runnable examples were found")
        let script = root + "/readme.sh"
        try ReadmeScript.script(for: blocks, prelude: prelude).write(toFile: script, atomically: true, encoding: .utf8)

        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home
        environment["EDITOR"] = "readme_editor"
        environment["README_LOGS"] = logs
        environment["README_PLISTSYNC"] = PlistSyncBinary.url.path
        environment["PLISTSYNC_BINARY"] = PlistSyncBinary.url.path
        for name in ["PLISTSYNC_DATA", "PLISTSYNC_CONFIG"] { environment[name] = nil }
        let (status, transcript) = try Self.run(script, in: clone, environment: environment, deadline: 300)
        XCTAssertEqual(status, 0, transcript)
        XCTAssertTrue(transcript.contains("README: every example ran"), transcript)

        // What the text promises, beyond every command succeeding.
        XCTAssertTrue(output(of: "$B user list", in: transcript).contains("alice"), transcript)
        XCTAssertTrue(output(of: "$B user list", in: transcript).contains("bob"), transcript)
        XCTAssertTrue(FileManager.default.fileExists(atPath: clone + "/plistsync-data/admin-password"), "the quick start made the admin account")
        XCTAssertTrue(output(of: "$B status --dir ~/Sync", in: transcript).contains("agent:      running"), transcript)
        let invitation = output(of: #"$B invite contacts --role write --note "for carol""#, in: transcript)
        XCTAssertTrue(invitation.contains("http://127.0.0.1:7421/join#s=psi_") && invitation.contains("&p=7420"), transcript)
        XCTAssertTrue(output(of: "$B conflicts --dir ~/Sync", in: transcript).contains("contacts/Ada"), transcript)
        XCTAssertTrue(output(of: "$B resolve contacts/Ada --keep mine --dir ~/Sync", in: transcript).contains("1 conflict copy removed"), transcript)
        XCTAssertTrue(output(of: "$B restore contacts/Ada --dir ~/Sync", in: transcript).contains("restored contacts/Ada"), transcript)
        let exported = try PlistFile.decode(Array(try Data(contentsOf: URL(fileURLWithPath: clone + "/contacts.plist"))))
        XCTAssertEqual(exported.1, .binary)
        guard case .array(let contacts) = exported.0 else { return XCTFail("contacts.plist: \(exported.0)") }
        XCTAssertTrue(contacts.contains { if case .dictionary(let row) = $0 { row["name"] == .string("Grace Hopper") } else { false } },
                      "the import reached the server and came back: \(contacts)")
        let archive = try PlistFile.decode(Array(try Data(contentsOf: URL(fileURLWithPath: clone + "/items.archive")))).0
        XCTAssertEqual(try KeyedArchive.records(in: archive).records.count, 2, "the inventory went in and out as an archive")
    }

    /// The files the examples take as the reader's own: an app's contacts and an inventory
    /// archive (a custom class, as Homepwner's BNRItem).
    private func writeFixtures(clone: String, home: String) throws {
        let contacts: [Value] = [
            .dictionary(["name": .string("Grace Hopper"), "phone": .string("555-0101")]),
            .dictionary(["name": .string("Alan Turing"), "phone": .string("555-0102")]),
        ]
        try Data(PlistFile.encode(.array(contacts), as: .xml)).write(to: URL(fileURLWithPath: home + "/Documents/contacts.plist"))
        let items: [[String: Value]] = [
            ["itemKey": .string("A1"), "itemName": .string("Lamp"), "serialNumber": .string("L-1"), "valueInDollars": .integer(40),
             "dateCreated": .date(Date(timeIntervalSinceReferenceDate: 700_000_000.25))],
            ["itemKey": .string("B2"), "itemName": .string("Chair"), "serialNumber": .string("C-2"), "valueInDollars": .integer(75),
             "dateCreated": .date(Date(timeIntervalSinceReferenceDate: 700_000_100.5))],
        ]
        let archive = Data(KeyedArchive.encode(items, shape: KeyedArchive.Shape(elementClasses: ["BNRItem", "NSObject"])))
        try archive.write(to: URL(fileURLWithPath: clone + "/items.archive"))
        try archive.write(to: URL(fileURLWithPath: home + "/Sync/items.archive"))
    }

    /// What one step printed: the lines after "$ command" up to the next step.
    private func output(of command: String, in transcript: String) -> String {
        guard let start = transcript.range(of: "\n$ " + command + "\n") else { return "" }
        let rest = transcript[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n$ ")?.lowerBound ?? rest.endIndex)])
    }

    private static func portIsFree(_ port: UInt16) -> Bool {
        let (descriptor, bound) = boundLoopbackSocket(port: port)
        close(descriptor)
        return bound == Int(port)
    }

    /// Runs a bash script; (status, stdout + stderr). Killed at the deadline.
    private static func run(_ script: String, in directory: String, environment: [String: String], deadline seconds: Double) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let timer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        timer.cancel()
        return (process.terminationStatus, text)
    }
}
