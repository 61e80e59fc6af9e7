import EventLoop
import Foundation
import PlistFormat
import SyncClient
import SyncCore
import SyncProtocol

/// `bench scale`, agent: in a folder an agent mirrors (its collection already synced), one
/// record file saved at a time; how long until a subscriber on the server sees its CHANGE.
public struct AgentEditScenario {
    public var folder: String
    public var collection: String
    /// Records `r0`…`r<n-1>` in the collection; the trials edit records spread over them.
    public var records: Int
    public var trials: Int

    public init(folder: String, collection: String, records: Int, trials: Int) {
        self.folder = folder
        self.collection = collection
        self.records = records
        self.trials = trials
    }

    public func run(against target: BenchTarget) throws -> LatencySummary {
        let loop = EventLoop()
        var subscriber: ClientConnection?
        var samples = LatencyHistogram()
        var trial = 0
        var waitingFor: (id: String, since: UInt64)?
        var failure: String?
        let pacing = LoopTimer(loop: loop)
        let deadline = LoopTimer(loop: loop)

        func save() {
            guard trial < trials else { return loop.stop() }
            let index = (trial * 7_919) % records
            let id = "r\(index)"
            let fields: Fields = ["name": .string("Record \(index)"), "serial": .string("SN-\(index)"), "value": .integer(Int64(1_000_000 + trial))]
            let path = folder + "/" + collection + "/" + id + ".plist"
            let temp = folder + "/" + collection + "/." + id + ".tmp"
            _ = FileManager.default.createFile(atPath: temp, contents: Data(PlistFile.encode(.dictionary(fields), as: .xml)))
            waitingFor = (id, EventLoop.monotonicNanoseconds())
            rename(temp, path)
            trial += 1
            deadline.start(after: 30_000) {
                failure = "the save of \(id) did not reach the server within 30 s"
                loop.stop()
            }
        }
        target.open(on: loop) { client in
            guard let client else {
                failure = "cannot log in"
                return loop.stop()
            }
            subscriber = client
            client.onUntagged = { line in
                guard case .change(_, _, let id, _)? = line.event, let waiting = waitingFor, waiting.id == id else { return }
                samples.add(EventLoop.monotonicNanoseconds() - waiting.since)
                waitingFor = nil
                deadline.stop()
                // A pause between saves, as a person's would be.
                pacing.start(after: 50) { save() }
            }
            client.send(.listPage(collection: collection, after: nil, limit: 1)) { line in
                guard case .ok(_, .listed(_, _, let seq), _) = line.reply else {
                    failure = "LIST answered \(line.text)"
                    return loop.stop()
                }
                client.send(.subscribe(collection: collection, since: seq)) { _ in save() }
            }
        }
        loop.run()
        pacing.close()
        deadline.close()
        subscriber?.close()
        loop.runOnce(wait: false)
        loop.close()
        if let failure { throw BenchFailure(failure) }
        return samples.summary
    }
}
