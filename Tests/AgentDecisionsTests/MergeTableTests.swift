import Foundation
import PlistFormat
import SyncCore
import SyncProtocol
import XCTest
@testable import AgentDecisions

/// Issue 44 item 3: Protocol/merge-cases.json, the one table of merge cases, run against the
/// agent's own decisions: `RemoteChange.decide` for a device's state (`mine`, a plist file, or
/// none for a delete) meeting a newer server state (`theirs`) against what was last synced
/// (`base`), and `ThreeWayMerge` where it says merge. The console's merge module runs the same
/// table (Tests/Console/merge-table.mjs), so the two cannot drift.
final class MergeTableTests: XCTestCase {
    static let table = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/merge-cases.json")

    /// A case's record state: its fields, or nil for deleted; `.none` for no state at all (`base: null`).
    private func state(_ value: Value?) -> Fields?? {
        guard case .dictionary(let members)? = value else { return .none }
        if case .dictionary(let fields)? = members["fields"] { return .some(fields) }
        return .some(nil)
    }

    /// What the agent ends with: the record's fields (nil: deleted), the conflict copy it files,
    /// and whether its state goes up to the server.
    private struct Outcome: Equatable {
        var result: Fields?
        var conflictCopy: Fields?
        var push: Bool

        /// Fields compared bit for bit (`==` takes -0.0 for 0.0, and a string for its twin in
        /// the other normalisation).
        static func == (a: Outcome, b: Outcome) -> Bool {
            func same(_ x: Fields?, _ y: Fields?) -> Bool {
                switch (x, y) {
                case (nil, nil): true
                case (let x?, let y?): Value.fields(x, areIdenticalTo: y)
                default: false
                }
            }
            return same(a.result, b.result) && same(a.conflictCopy, b.conflictCopy) && a.push == b.push
        }
    }

    private func agentOutcome(base: Fields??, mine: Fields?, theirs: Fields?) throws -> Outcome {
        let baseRev: Int64 = 3
        let synced: SyncedRecord? = base.map { fields in
            SyncedRecord(rev: baseRev, position: fields == nil ? nil : "a0", fieldsJSON: fields.map { ValueJSON.encode(fields: $0) },
                         fileHash: fields.map { ContentHash.of(PlistFile.encode(.dictionary($0), as: .xml)) }, format: .xml)
        }
        let local = mine.map { PlistFile.encode(.dictionary($0), as: .xml) }
        let remote = RemoteState(rev: baseRev + 1, position: theirs == nil ? nil : "a0", fields: theirs)
        guard case .apply(_, let action) = RemoteChange.decide(remote, synced: synced, local: local, context: RemoteChange.Context(fromConflict: true)) else {
            throw XCTSkip("not applied")
        }
        switch action {
        case .take(let fields, _): return Outcome(result: fields, conflictCopy: nil, push: false)
        case .remove, .bothDeleted: return Outcome(result: nil, conflictCopy: nil, push: false)
        case .restore(let fields): return Outcome(result: fields, conflictCopy: nil, push: false)
        case .keepEdit: return Outcome(result: mine, conflictCopy: nil, push: true)
        case .keepDelete: return Outcome(result: nil, conflictCopy: nil, push: true)
        case .merge(let bytes, let remoteFields, _):
            let localFields = try PlistFile.decodeRecord(bytes).0
            let merged = ThreeWayMerge.merge(base: base ?? nil, local: localFields, remote: remoteFields)
            return Outcome(result: merged.merged, conflictCopy: merged.hasConflicts ? localFields : nil,
                           push: !Value.fields(merged.merged, areIdenticalTo: remoteFields))
        }
    }

    func testTheAgentDecidesEveryCaseOfTheTableAsItSays() throws {
        guard case .array(let cases) = try ValueJSON.decode(Array(try Data(contentsOf: Self.table))) else { return XCTFail("the table is not a list") }
        XCTAssertGreaterThanOrEqual(cases.count, 20)
        for item in cases {
            if case .dictionary(let members) = item, case .dictionary(let order)? = members["order"] {
                try checkOrderCase(order, name: members["name"].map { ValueJSON.encode($0) } ?? "?")
                continue
            }
            guard case .dictionary(let members) = item, case .string(let name)? = members["name"], case .dictionary(let expect)? = members["expect"],
                case .bool(let push)? = expect["push"]
            else { return XCTFail("a case without name or expect: \(ValueJSON.encode(item))") }
            let mine = try XCTUnwrap(state(members["mine"]), name)
            let theirs = try XCTUnwrap(state(members["theirs"]), name)
            let copy: Fields? = if case .dictionary(let fields)? = expect["conflict_copy"] { fields } else { nil }
            let expected = Outcome(result: try XCTUnwrap(state(expect["result"]), name), conflictCopy: copy, push: push)
            XCTAssertEqual(try agentOutcome(base: state(members["base"]), mine: mine, theirs: theirs), expected, name)
        }
    }

    /// An order case: the agent's OrderPlanner turns this device's reordering (`base` to `mine`)
    /// into moves against the server's order (`theirs`); applied there, they give `expect`.
    private func checkOrderCase(_ order: Fields, name: String) throws {
        func ids(_ key: String) throws -> [String] {
            guard case .array(let items)? = order[key] else { throw XCTSkip("\(name): no \(key)") }
            return items.compactMap { if case .string(let id) = $0 { id } else { nil } }
        }
        let theirs = try ids("theirs")
        var result = theirs
        for move in OrderPlanner.moves(from: try ids("base").recordIDs, to: try ids("mine").recordIDs, current: theirs.recordIDs) {
            let id = move.id.string
            guard let from = result.firstIndex(of: id) else { continue }
            result.remove(at: from)
            switch move.placement {
            case .first: result.insert(id, at: 0)
            case .last: result.append(id)
            case .after(let anchor): result.insert(id, at: result.firstIndex(of: anchor).map { $0 + 1 } ?? result.endIndex)
            case .before(let anchor): result.insert(id, at: result.firstIndex(of: anchor) ?? result.endIndex)
            }
        }
        XCTAssertEqual(result, try ids("expect"), name)
    }
}
