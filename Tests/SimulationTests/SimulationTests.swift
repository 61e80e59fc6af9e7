import Foundation
import ServerKit
import XCTest

/// The deterministic simulation of agents, apps and the server (issue 18): many seeded runs,
/// each checked for convergence and lost values. `PLISTSYNC_SIMULATION_SEED=N` replays one
/// run; `PLISTSYNC_SIMULATION_RUNS=N` sets how many run (from `PLISTSYNC_SIMULATION_FIRST`).
final class SimulationTests: XCTestCase {
    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    override func setUp() {
        ServerLog.quiet = true
        // The server's errors are the faults the run injects (a full disk, a stalled store).
        ServerLog.output = { _ in }
    }

    override func tearDown() {
        ServerLog.quiet = false
        ServerLog.output = { line in FileHandle.standardError.write(Data(line.utf8)) }
    }

    func testSeededRunsConvergeAndLoseNothing() throws {
        let seeds: [UInt64]
        if let one = environment["PLISTSYNC_SIMULATION_SEED"].flatMap(UInt64.init) {
            seeds = [one]
        } else {
            let first = environment["PLISTSYNC_SIMULATION_FIRST"].flatMap(UInt64.init) ?? 1
            let runs = environment["PLISTSYNC_SIMULATION_RUNS"].flatMap(UInt64.init) ?? 200
            seeds = Array(first..<(first + runs))
        }
        let started = Date()
        var events = 0
        var failed = 0
        for seed in seeds {
            let report = try Simulation(seed: seed).run()
            events += report.events
            // PLISTSYNC_SIMULATION_TRACE=text: every line with that text (of a passing seed too,
            // when it is the only one).
            let trace = environment["PLISTSYNC_SIMULATION_TRACE"]
            let showing = seeds.count == 1 && trace != nil
            guard !report.violations.isEmpty || showing else { continue }
            if !report.violations.isEmpty { failed += 1 }
            var text = "seed \(seed): \(report.violations.count) violations (\(report.faults))\n  " + report.violations.prefix(20).joined(separator: "\n  ")
            if seeds.count == 1 || failed == 1 {
                // The lines about the record of the first violation (its id is the word after "c/").
                let subject = trace ?? String(report.violations[0].components(separatedBy: "c/").dropFirst().first?.prefix { $0.isLetter } ?? "")
                for (machine, log) in report.logs.sorted(by: { $0.key < $1.key }) {
                    let lines = log.filter { subject.isEmpty || $0.contains(subject) || $0.contains("crashed") || $0.contains("started") || $0.contains("dropped") }
                    // Non-ASCII spelled out: ids that differ only in normalisation look alike.
                    let spelled = lines.suffix(trace == nil ? 150 : 100_000).map { line in
                        line.unicodeScalars.map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
                    }
                    text += "\n--- \(machine)\n" + spelled.joined(separator: "\n")
                }
            }
            text += "\n  replay: PLISTSYNC_SIMULATION_SEED=\(seed) swift test --filter SimulationTests"
            guard !report.violations.isEmpty else {
                print(text)
                continue
            }
            XCTFail(text)
            if failed >= 5 { break }
        }
        let seconds = Date().timeIntervalSince(started)
        print("simulation: \(seeds.count) runs, \(events) events, \(failed) failed, \(String(format: "%.1f", seconds)) s")
    }
}
