import EventLoop
import Foundation
import PlistFormat
import SyncClient
import SyncCore
import SyncProtocol

/// `bench scale`, agent: a collection an agent mirrors (synced already), edited one record at a
/// time either way: a file saved in the agent's folder until a subscriber on the server sees
/// its CHANGE (`savesToChanges`), or a PUT over the protocol until the agent's file holds it
/// (`putsToFiles`).
public struct AgentEditScenario {
    public var folder: String
    public var collection: String
    /// Records `r0`…`r<n-1>` in the collection (rev 1); the trials edit records spread over them.
    public var records: Int
    public var trials: Int

    public init(folder: String, collection: String, records: Int, trials: Int) {
        self.folder = folder
        self.collection = collection
        self.records = records
        self.trials = trials
    }

    public func savesToChanges(against target: BenchTarget) throws -> LatencySummary {
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
            client.subscribeFromNow(collection) { refused in
                guard let refused else { return save() }
                failure = refused
                loop.stop()
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

    public func putsToFiles(against target: BenchTarget) throws -> LatencySummary {
        let loop = EventLoop()
        var writer: ClientConnection?
        var samples = LatencyHistogram()
        var trial = 0
        var waiting: (path: String, value: Int64, since: UInt64)?
        var failure: String?
        var watcher: FolderWatcher?
        let pacing = LoopTimer(loop: loop)
        let deadline = LoopTimer(loop: loop)

        func arrived() {
            guard let expected = waiting, let bytes = FileManager.default.contents(atPath: expected.path),
                let (fields, _) = try? PlistFile.decodeRecord(Array(bytes)), fields["value"] == .integer(expected.value) else { return }
            samples.add(EventLoop.monotonicNanoseconds() - expected.since)
            waiting = nil
            deadline.stop()
            pacing.start(after: 50) { edit() }
        }
        func edit() {
            guard trial < trials, let writer else { return loop.stop() }
            // Records other than those `savesToChanges` edits.
            let index = (trial * 6_007 + 3) % records
            let value = Int64(2_000_000 + trial)
            let fields = "{\"name\":\"Record \(index)\",\"serial\":\"SN-\(index)\",\"value\":\(value)}"
            trial += 1
            writer.send(.get(collection: collection, id: "r\(index)")) { line in
                guard case .ok(_, .record(_, _, let rev, _), _) = line.reply else {
                    failure = "GET answered \(line.text)"
                    return loop.stop()
                }
                waiting = (folder + "/" + collection + "/r\(index).plist", value, EventLoop.monotonicNanoseconds())
                writer.send(.put(collection: collection, id: "r\(index)", baseRev: rev, fieldsJSON: fields)) { _ in }
                deadline.start(after: 30_000) {
                    failure = "the edit of r\(index) did not reach the agent's folder within 30 s"
                    loop.stop()
                }
            }
        }
        do {
            watcher = try FolderWatcher(loop: loop, path: folder + "/" + collection) { _ in arrived() }
        } catch {
            throw BenchFailure("cannot watch \(folder)/\(collection): \(error)")
        }
        let backstop = LoopTimer(loop: loop)
        backstop.start(after: 20, repeatEvery: 20) { arrived() }
        target.open(on: loop) { client in
            guard let client else {
                failure = "cannot log in"
                return loop.stop()
            }
            writer = client
            edit()
        }
        loop.run()
        watcher?.close()
        backstop.close()
        pacing.close()
        deadline.close()
        writer?.close()
        loop.runOnce(wait: false)
        loop.close()
        if let failure { throw BenchFailure(failure) }
        return samples.summary
    }
}
