import Foundation
import PlistSyncTesting
@testable import AgentKit

/// What every part of one simulated run shares: the scheduler (time and randomness), the file
/// system of all machines, the server, and the machines.
final class SimulationWorld {
    let scheduler: Scheduler
    let fileSystem = SimulatedFileSystem()
    let server: SeededServer
    private(set) var machines: [SimulatedMachine] = []
    /// Most milliseconds a message takes each way.
    var maxLatency: UInt64 = 5
    /// Called just before lines from the server reach a machine's agent (a scripted scenario
    /// stands an app's save there).
    var beforeArrival: ((SimulatedMachine, [[UInt8]]) -> Void)?
    /// Batches of lines from the server that reached an agent so far.
    var arrivals = 0
    /// Why the run could not go on, if it could not.
    private(set) var failure: String?

    /// `sameDevice`: every machine has the same device name.
    init(seed: UInt64, machineCount: Int, sameDevice: Bool, folder: String) throws {
        scheduler = Scheduler(seed: seed)
        server = try SeededServer(folder: folder + "/server", scheduler: scheduler, users: [("alice", "pw")])
        for index in 0..<machineCount {
            machines.append(SimulatedMachine(name: "m\(index)", device: sameDevice ? "twin" : "m\(index)", world: self, stateFolder: folder))
        }
        fileSystem.now = { [unowned self] path in
            let machine = machines.first { path.hasPrefix($0.root + "/") }
            return SimulatedClock.epoch.addingTimeInterval(Double(scheduler.now) / 1000 + (machine?.clockOffset ?? 0))
        }
        fileSystem.onChange = { [unowned self] folder, name, renamed in
            for machine in machines where folder == machine.root || folder.hasPrefix(machine.root + "/") {
                machine.fileChanged(folder: folder, name: name, renamed: renamed)
            }
        }
    }

    /// The run cannot go on (the first reason is kept).
    func fail(_ reason: String) {
        failure = failure ?? reason
    }

    /// Runs the scheduler in steps of 10 ms until `condition` holds or `milliseconds` pass;
    /// whether it held.
    @discardableResult
    func run(within milliseconds: UInt64, until condition: () -> Bool) -> Bool {
        let deadline = scheduler.now + milliseconds
        while scheduler.now < deadline {
            if condition() { return true }
            scheduler.run(until: scheduler.now + 10)
        }
        return condition()
    }

    func close() {
        for machine in machines { machine.crash() }
        scheduler.clear()
        beforeArrival = nil
        server.close()
    }
}
