import Foundation
import XCTest
@testable import ServerKit
import SyncCore

/// Issue 45: GRANT and the USER changes pipeline like writes. A script adding users and
/// granting them roles hands each change to the committer without waiting for the one before
/// to commit, in request order (an add's password is hashed first, and the GRANT after it
/// still commits after it); record writes behind them wait, as their role checks depend on them.
final class AdministrationPipelineTests: XCTestCase {
    private var memory: InMemoryServer!
    private var client: BufferClient!
    private var commits: [String] = []
    private var held: [() -> Void] = []

    override func setUpWithError() throws {
        memory = try InMemoryServer(users: [(name: "root", password: "pw", admin: true), (name: "alice", password: "pw", admin: false)])
        client = memory.connect()
        try client.expect("a AUTH root pw", equals: "a OK AUTH root")
        try client.expect("c CREATE team", equals: "c OK CREATE team")
        let session = try XCTUnwrap(client.session)
        let carryOut = session.emit
        session.emit = { [unowned self] action in
            guard case .commit(let operation, _) = action else { return carryOut(action) }
            commits.append(Self.describe(operation))
            held.append { carryOut(action) }
        }
    }

    override func tearDown() {
        client = nil
        memory = nil
    }

    private static func describe(_ operation: StoreOperation) -> String {
        switch operation {
        case .addUser(let name, _, _): "add \(name)"
        case .grant(_, let user, let role): "grant \(user) \(role?.name ?? "none")"
        case .setServerAdmin(let name, let on): "admin \(name) \(on)"
        case .put(_, let id, _, _, _): "put \(id)"
        default: "\(operation)"
        }
    }

    /// Waits until `count` commits were handed over (passwords are hashed on a thread).
    private func waitForCommits(_ count: Int) {
        client.wait(within: 5) { commits.count >= count }
    }

    func testChangesAreCommittedInOrderWithoutWaitingForOneAnother() throws {
        for (index, name) in ["bob", "carol", "dave"].enumerated() {
            try client.send("u\(index) USER ADD \(name) pw\(index)")
            try client.send("g\(index) GRANT team \(name) write")
        }
        try client.send("m USER ADMIN alice ON")
        try client.send(#"p PUT team n1 0 {"a":1}"#)
        waitForCommits(7)
        client.turnLoop(for: 0.1)
        // Seven changes went to the committer, none answered; the write waits behind them.
        XCTAssertEqual(commits, ["add bob", "grant bob write", "add carol", "grant carol write", "add dave", "grant dave write", "admin alice true"])
        let first = held
        held = []
        first.forEach { $0() }
        for (index, name) in ["bob", "carol", "dave"].enumerated() {
            XCTAssertEqual(try client.readLine(), "u\(index) OK USER ADD \(name)")
            XCTAssertEqual(try client.readLine(), "g\(index) OK GRANT")
        }
        XCTAssertEqual(try client.readLine(), "m OK USER ADMIN alice ON")
        waitForCommits(8)
        XCTAssertEqual(commits.last, "put n1")
        held.forEach { $0() }
        XCTAssertEqual(try client.readLine(), "p OK PUT team n1 1 1")
    }

    func testAChangeRefusedInThePipelineIsAnsweredInItsPlace() throws {
        try client.send("u USER ADD bob pw")
        try client.send("g GRANT team nobody read")
        try client.send("e USER ADD bob again")
        try client.send("x USER REMOVE nobody")
        waitForCommits(4)
        held.forEach { $0() }
        XCTAssertEqual(try client.readLine(), "u OK USER ADD bob")
        XCTAssertEqual(try client.readLine(), "g ERR NOT_FOUND no user nobody")
        XCTAssertEqual(try client.readLine(), "e ERR EXISTS user bob exists")
        XCTAssertEqual(try client.readLine(), "x ERR NOT_FOUND no user nobody")
    }
}
