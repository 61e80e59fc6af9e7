import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Issue 9, item 7: a reorder in the order file is never overwritten before it is read, and two
/// people moving different rows at once both keep their moves.
final class AgentOrderTests: TwoAgentTestCase {
    override var password: String { "wonderland" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try a.start()
        try b.start()
    }

    private func writeOrder(_ agent: MirrorView, _ ids: [String]) throws {
        let temp = agent.directory + "/.list.order.tmp"
        try Data(PlistFile.encode(.array(ids.map(Value.string)), as: .xml)).write(to: URL(fileURLWithPath: temp))
        XCTAssertEqual(rename(temp, agent.directory + "/list.order.plist"), 0)
    }

    private func seed(_ count: Int) throws -> [String] {
        let ids = (0..<count).map { "r\($0)" }
        for id in ids { try a.save("list", id, ["name": .string(id)]) }
        eventually(15, "A \(a.order("list")) B \(b.order("list"))") { a.order("list") == ids && b.order("list") == ids }
        return ids
    }

    func testAnOrderEditIsReadBeforeTheFileIsRewrittenForRemoteCreates() throws {
        var ids = try seed(6)
        for trial in 0..<8 {
            // The user moves the last row to the top while the other machine adds rows: the
            // agent must not rewrite the file with the old order before it reads the edit.
            let moved = ids.last!
            // Remote creates land from 60 ms before to 30 ms after the edit: an order flush
            // that follows them falls inside the edit's debounce.
            for index in 0..<30 {
                if index == 20 { try writeOrder(a, [moved] + ids.dropLast()) }
                try b.save("list", "new\(trial)-\(index)", ["name": .string("new")])
                usleep(3_000)
            }
            eventually(15, "trial \(trial): \(moved) is not first: A \(a.order("list").prefix(3)) B \(b.order("list").prefix(3))") {
                let order = b.order("list")
                return order.first == moved && order.count == ids.count + 30 && a.order("list") == order
            }
            ids = a.order("list")
        }
    }

    func testTwoPeopleMovingDifferentRowsAtOnceBothKeepTheirMoves() throws {
        var ids = try seed(8)
        for trial in 0..<5 {
            // A moves its last row to the top; B, at the same moment, moves its third row to
            // the end. Each file was edited from the same order: both moves must survive.
            let top = ids[ids.count - 1]
            let bottom = ids[2]
            var orderA = ids
            orderA.removeLast()
            orderA.insert(top, at: 0)
            var orderB = ids
            orderB.remove(at: 2)
            orderB.append(bottom)
            try writeOrder(a, orderA)
            try writeOrder(b, orderB)
            var expected = ids.filter { $0 != top && $0 != bottom }
            expected.insert(top, at: 0)
            expected.append(bottom)
            eventually(15, "trial \(trial): expected \(expected)\nA \(a.order("list"))\nB \(b.order("list"))") {
                a.order("list") == expected && b.order("list") == expected
            }
            ids = expected
        }
    }

    func testAnOrderEditMadeWhileStoppedIsPushedAtStart() throws {
        let ids = try seed(4)
        a.stop()
        try writeOrder(a, ids.reversed())
        try a.start()
        eventually(15, "B \(b.order("list"))\n\(a.log())") { b.order("list") == ids.reversed() }
    }
}

extension AgentOrderTests {
    /// A row added and placed in the order file is moved into place only once the server has
    /// placed it: an order edit read after the create was answered but before its change came
    /// back used to plan the moves without the new row and then count the edit as done, so the
    /// row stayed where the server first put it (last).
    func testANewRowPlacedAtTheTopStaysThereWhenItsChangeComesLate() throws {
        let ids = try seed(3)
        let proxy = try ChangeHoldingProxy(serverPort: server.port)
        let late = LiveAgent(port: { proxy.port }, user: "alice", password: password, device: "tablet")
        defer { late.stop() }
        try late.start()
        eventually(15, late.log()) { late.order("list") == ids }
        proxy.hold()
        try late.save("list", "top", ["name": .string("top")])
        try writeOrder(late, ["top"] + ids)
        // The create is answered meanwhile; its change waits at the proxy.
        eventually(10, late.statusText()) { late.statusText().contains("\"pending\":0") && late.statusText().contains("\"pushed\":1") }
        proxy.release()
        eventually(15, "B \(b.order("list"))\nlate \(late.order("list"))\n\(late.log())") {
            b.order("list") == ["top"] + ids && late.order("list") == ["top"] + ids
        }
    }

    func testADeletedOrderFileIsWrittenAgainAndABrokenOneIsReportedNotOverwritten() throws {
        let ids = try seed(3)
        unlink(a.directory + "/list.order.plist")
        try b.save("list", "late", ["name": .string("late")])
        eventually(10, "A \(a.order("list"))") { a.order("list") == ids + ["late"] }
        try Data("not a plist".utf8).write(to: URL(fileURLWithPath: a.directory + "/list.order.plist"))
        try b.save("list", "later", ["name": .string("later")])
        eventually(10, a.statusText()) { a.statusText().contains("list.order.plist") }
        XCTAssertEqual(try String(contentsOfFile: a.directory + "/list.order.plist", encoding: .utf8), "not a plist")
        try writeOrder(a, (ids + ["late", "later"]).reversed())
        eventually(10, "B \(b.order("list"))") { b.order("list") == (ids + ["late", "later"]).reversed() }
    }
}
