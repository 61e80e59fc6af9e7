import Foundation
import PlistFormat
import SyncProtocol
import XCTest

/// Issue 9: three agents edit one collection at random while agents and the server are killed
/// with SIGKILL and restarted. At the end every mirror and the server agree (records and order),
/// and every value anyone typed still exists somewhere: in a record, a conflict copy or a kept
/// version. The seed is printed; `PLISTSYNC_CHAOS_SEED=N` replays a run, `PLISTSYNC_CHAOS_ROUNDS`
/// makes it longer.
final class ChaosTests: XCTestCase {
    /// SplitMix64: small, seedable, the same on every platform.
    private struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
    }

    func testThreeAgentsConvergeWithNothingLostUnderKillNine() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["PLISTSYNC_CHAOS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let rounds = environment["PLISTSYNC_CHAOS_ROUNDS"].flatMap(Int.init) ?? 80
        print("chaos seed \(seed), \(rounds) rounds (replay: PLISTSYNC_CHAOS_SEED=\(seed))")
        var random = SeededGenerator(state: seed)

        let server = try TestServer.running()
        let alice = try server.login("alice", "pw")
        try alice.expect("c CREATE chaos", equals: "c OK CREATE chaos")
        let agents = try ["one", "two", "three"].map { try TestAgent(server: server, user: "alice", password: "pw", device: $0) }
        for agent in agents { try agent.start() }
        let kept = (0..<6).map { "k\($0)" }
        var typed: [String] = []
        var typedInto: [String: String] = [:]
        var counter = 0
        var serverKills = 0

        for _ in 0..<rounds {
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let agent = agents[Int.random(in: 0..<3, using: &random)]
                counter += 1
                let token = String(format: "typed-%05d-%@", counter, agent.device)
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<2:
                    // Everyone writes the same field: concurrent writes make conflict copies. (A
                    // value overwritten on the same machine before it was pushed, e.g. while its
                    // agent was down, is gone by the user's own hand, so these are not counted.)
                    let id = kept[Int.random(in: 0..<2, using: &random)]
                    var fields = agent.fields("chaos", id) ?? [:]
                    fields["shared"] = .string(token)
                    try agent.save("chaos", id, fields)
                case 2..<6:
                    // Edit (or create) a record that nobody deletes: add a field.
                    let id = kept[Int.random(in: 0..<kept.count, using: &random)]
                    var fields = agent.fields("chaos", id) ?? [:]
                    fields["f\(counter)"] = .string(token)
                    try agent.save("chaos", id, fields)
                    typed.append(token)
                    typedInto[token] = id
                case 6..<8:
                    try agent.save("chaos", "t\(counter)", ["v": .string(token)])
                case 8:
                    let temporary = agent.snapshot()["chaos"]?.keys.filter { $0.hasPrefix("t") }.sorted() ?? []
                    if let victim = temporary.randomElement(using: &random) { unlink(agent.path("chaos", victim)) }
                default:
                    var order = agent.order("chaos")
                    order.shuffle(using: &random)
                    if !order.isEmpty {
                        let temp = agent.directory + "/.chaos.order.tmp"
                        try Data(PlistFile.encode(.array(order.map(Value.string)), as: .xml)).write(to: URL(fileURLWithPath: temp))
                        rename(temp, agent.directory + "/chaos.order.plist")
                    }
                }
            }
            usleep(UInt32.random(in: 0...80_000, using: &random))
            switch Int.random(in: 0..<12, using: &random) {
            case 0, 1:
                let agent = agents[Int.random(in: 0..<3, using: &random)]
                if agent.isRunning { agent.stop(signal: SIGKILL) } else { try agent.start() }
            case 2 where serverKills < 3:
                serverKills += 1
                server.stop(signal: SIGKILL)
                usleep(UInt32.random(in: 50_000...400_000, using: &random))
                try server.start()
            default:
                if let stopped = agents.first(where: { !$0.isRunning }), Bool.random(using: &random) { try stopped.start() }
            }
        }
        for agent in agents where !agent.isRunning { try agent.start() }

        func serverRecords() -> [String: Fields]? {
            guard let client = try? server.login("alice", "pw"), (try? client.send("l LIST chaos")) != nil else { return nil }
            var records: [String: Fields] = [:]
            while let line = try? client.line() {
                guard let parsed = try? ServerLine.parse(Array(line.utf8)) else { return nil }
                if parsed.tag == "l" { return records }
                if parsed.words.count > 2 { records[parsed.words[2]] = parsed.payload }
            }
            return nil
        }
        let describe = {
            "seed \(seed)\nserver: \(serverRecords()?.keys.sorted() ?? [])\n" + agents.map { agent in
                "\(agent.device): records \(agent.snapshot()["chaos"]?.keys.sorted() ?? []) order \(agent.order("chaos")) copies \(agent.conflictCopies("chaos"))"
                    + "\n\(agent.statusText())\n\(agent.log().suffix(3000))"
            }.joined(separator: "\n")
        }
        eventually(90, describe()) {
            let first = agents[0].snapshot()["chaos"] ?? [:]
            return agents.allSatisfy { $0.snapshot()["chaos"] ?? [:] == first && $0.order("chaos") == agents[0].order("chaos") }
                && agents.allSatisfy { $0.conflictCopies("chaos").sorted() == agents[0].conflictCopies("chaos").sorted() }
                && serverRecords() == first && Set(agents[0].order("chaos")) == Set(first.keys)
        }

        // Nothing typed is lost: each value is in a record, a conflict copy or a kept version.
        var everything = ""
        for agent in agents {
            let enumerator = FileManager.default.enumerator(atPath: agent.directory)
            while let relative = enumerator?.nextObject() as? String {
                guard relative.hasSuffix(".plist") else { continue }
                everything += (try? String(contentsOfFile: agent.directory + "/" + relative, encoding: .utf8)) ?? ""
            }
        }
        let lost = typed.filter { !everything.contains($0) }
        XCTAssertEqual(lost, [], "seed \(seed): \(lost.count) of \(typed.count) typed values exist nowhere (typed into \(lost.map { typedInto[$0] ?? "?" }))\n"
            + agents.map { "\($0.device):\n\($0.log())" }.joined(separator: "\n"))
        print("chaos seed \(seed): \(typed.count) values typed, \(lost.count) lost; \(serverKills) server kills; \(agents[0].conflictCopies("chaos").count) conflict copies")
    }
}
