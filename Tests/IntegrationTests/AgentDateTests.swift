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

/// Issue 43 item 1 end to end: an integer above Int64 in a binary plist Cocoa wrote travels from
/// one mirror through the server to another and back, bit-exact (it became 2^63 + 44's wrapped
/// twin, -9223372036854775764, and 2^64 - 1 became -1).
final class AgentIntegerRangeTests: TwoAgentTestCase {
    func testIntegersAboveInt64SyncBitExactThroughEveryHop() throws {
        try a.start()
        try b.start()
        let serial = Value.unsigned(UInt64(1) << 63 + 44)
        try a.save("inventory", "router", ["name": .string("Router"), "serial": serial, "mask": .unsigned(.max), "low": .integer(.min)], format: .binary)
        eventually { b.fields("inventory", "router")?["name"] == .string("Router") }
        XCTAssertEqual(b.fields("inventory", "router")?["serial"], serial)
        XCTAssertEqual(b.fields("inventory", "router")?["mask"], .unsigned(.max))
        XCTAssertEqual(b.fields("inventory", "router")?["low"], .integer(.min))
        let text = try String(contentsOfFile: b.path("inventory", "router"), encoding: .utf8)
        XCTAssertTrue(text.contains("<integer>18446744073709551615</integer>") && text.contains("<integer>9223372036854775852</integer>"), text)
        let alice = try server.login("alice", "pw")
        try alice.expect("g GET inventory router", equals: #"g OK GET inventory router 1 a0 {"low":-9223372036854775808,"mask":18446744073709551615,"name":"Router","serial":9223372036854775852}"#)
        // An edit of another field in B's XML keeps them; A's binary file gets them back as 16-byte integers.
        var edited = try XCTUnwrap(b.fields("inventory", "router"))
        edited["name"] = .string("Core router")
        try b.save("inventory", "router", edited)
        eventually { a.fields("inventory", "router")?["name"] == .string("Core router") }
        XCTAssertEqual(a.fields("inventory", "router")?["serial"], serial)
        let binary = try Data(contentsOf: URL(fileURLWithPath: a.path("inventory", "router")))
        XCTAssertTrue(binary.starts(with: Array("bplist00".utf8)))
        XCTAssertNotNil(Array(binary).firstRange(of: [0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), "2^64 - 1 as a 16-byte integer")
        // Out of range over the wire is refused with the range, never wrapped.
        try alice.expect(#"p PUT inventory big 0 {"n":18446744073709551616}"#, prefix: "p ERR BAD_REQUEST bad JSON at byte ")
    }
}
