import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// XML plists hold dates in whole seconds (issue 9 item 11): the agent writes them the way
/// Foundation does, and a fraction from elsewhere is neither pushed back as an edit nor lost.
final class AgentDateTests: XCTestCase {
    func testXMLDatesAreWholeSecondsFoundationReadsAndSubsecondsSurviveAnEdit() throws {
        let server = try LiveServer.running()
        let a = LiveAgent(server: server, user: "alice", password: "pw", device: "laptop")
        let b = LiveAgent(server: server, user: "alice", password: "pw", device: "desktop")
        try a.start()
        try b.start()
        let precise = Date(timeIntervalSince1970: 1_717_243_200.25)  // 2024-06-01T12:00:00.25Z
        try a.save("inventory", "lamp", ["name": .string("Lamp"), "created": .date(precise)], format: .binary)
        eventually { b.fields("inventory", "lamp")?["name"] == .string("Lamp") }
        // B's new file is XML, with the date as Foundation writes it, and Foundation reads it.
        let text = try String(contentsOfFile: b.path("inventory", "lamp"), encoding: .utf8)
        XCTAssertTrue(text.contains("<date>2024-06-01T12:00:00Z</date>"), text)
        let data = try Data(contentsOf: URL(fileURLWithPath: b.path("inventory", "lamp")))
        let read = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any]
        XCTAssertEqual((read?["created"] as? Date)?.timeIntervalSince1970, 1_717_243_200)
        // Nothing is pushed back: the server's record stays rev 1 with the fraction.
        let alice = try server.login("alice", "pw")
        holds(1) { alice.ask("g GET inventory lamp") == "g OK GET inventory lamp 1 a0 {\"created\":{\"$date\":\"2024-06-01T12:00:00.25Z\"},\"name\":\"Lamp\"}" }
        // An edit of another field in B's XML keeps the fraction on the server and in A's file.
        var edited = b.fields("inventory", "lamp")!
        edited["name"] = .string("Desk lamp")
        try b.save("inventory", "lamp", edited)
        eventually { a.fields("inventory", "lamp")?["name"] == .string("Desk lamp") }
        XCTAssertEqual(a.fields("inventory", "lamp")?["created"], .date(precise))
        try alice.expect("g2 GET inventory lamp", equals: "g2 OK GET inventory lamp 2 a0 {\"created\":{\"$date\":\"2024-06-01T12:00:00.25Z\"},\"name\":\"Desk lamp\"}")
    }
}
