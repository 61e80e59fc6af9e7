import EventLoop
import Foundation
import PlistFormat
import SyncProtocol

/// `bench propagate`: a file saved atomically in agent A's folder → the identical file in agent
/// B's folder, through the server. Both agents are real processes started by the caller; this
/// side only writes files in A and watches B's folder (inotify), like a person would.
public struct PropagateScenario {
    public var folderA: String
    public var folderB: String
    public var trials: Int
    public var burst: Int
    public var collection = "bench_propagate"
    /// Quiet time before each trial once the last one arrived (Syncthing needs its own echo
    /// scan of a received file to be over before the next trial means anything).
    public var pauseMilliseconds: UInt64 = 20
    /// For Syncthing's floor: ask it to rescan each saved file at once.
    public var rescan: SyncthingRescan?

    public init(folderA: String, folderB: String, trials: Int, burst: Int) {
        self.folderA = folderA
        self.folderB = folderB
        self.trials = trials
        self.burst = burst
    }

    public struct Result: Sendable {
        /// Save-in-A to identical-in-B, per trial (creates and modifies alternate).
        public var latency: LatencySummary
        public var p90Milliseconds: Double
        public var trials: Int
        /// From the first write of the burst until every burst file is identical in B.
        public var burstMilliseconds: Double
        public var burstFiles: Int
    }

    /// Fails when B does not catch up within `timeoutSeconds` of a write.
    public func run(timeoutSeconds: Double = 30) throws -> Result {
        let pathA = folderA + "/" + collection
        let pathB = folderB + "/" + collection
        try FileManager.default.createDirectory(atPath: pathA, withIntermediateDirectories: true)
        try waitFor(timeoutSeconds, "the collection folder to appear in B") { FileManager.default.fileExists(atPath: pathB) }

        let loop = EventLoop()
        var expected: [String: Fields] = [:]
        var started: [String: UInt64] = [:]
        var samples = LatencyHistogram()
        var burstStart: UInt64 = 0
        var burstEnd: UInt64 = 0
        var phase = 0  // 0: single trials, 1: burst
        var trial = 0
        var failure: String?
        var watcher: FolderWatcher?
        let pacing = LoopTimer(loop: loop)
        let deadline = LoopTimer(loop: loop)
        // A slow backstop for an event that did not come; events do the measuring.
        let backstop = LoopTimer(loop: loop)

        func finish() {
            watcher?.close()
            pacing.close()
            deadline.close()
            backstop.close()
        }

        func arrivedAll() -> Bool {
            for (name, fields) in expected {
                guard let data = FileManager.default.contents(atPath: pathB + "/" + name + ".plist"),
                    let (actual, _) = try? PlistFile.decodeRecord(Array(data)), actual == fields
                else { return false }
                let now = EventLoop.monotonicNanoseconds()
                if phase == 0, let start = started.removeValue(forKey: name) { samples.add(now - start) }
                expected[name] = nil
            }
            return true
        }

        func save(_ name: String, _ fields: Fields) {
            let bytes = PlistFile.encode(.dictionary(fields), as: .xml)
            let temp = pathA + "/." + name + ".tmp"
            _ = FileManager.default.createFile(atPath: temp, contents: Data(bytes))
            rename(temp, pathA + "/" + name + ".plist")
            // What the file says (dates are kept to the microsecond), not what was meant.
            expected[name] = (try? PlistFile.decodeRecord(bytes).0) ?? fields
            if phase == 0 { rescan?.send(path: collection + "/" + name + ".plist", on: loop) }
        }

        func nextTrial() {
            if trial == trials {
                phase = 1
                burstStart = EventLoop.monotonicNanoseconds()
                for index in 0..<burst {
                    save("burst\(index)", ["name": .string("Burst record \(index)"), "serial": .string("SN-\(index)"),
                                           "value": .integer(Int64(index)), "created": .date(Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))])
                }
                rescan?.send(path: collection, on: loop)
                return
            }
            // Even trials create a record, odd ones modify the one just created.
            let name = "trial\(trial / 2)"
            save(name, ["name": .string("Trial \(trial)"), "phone": .string("555-\(1000 + trial)"), "number": .integer(Int64(trial))])
            started[name] = EventLoop.monotonicNanoseconds()
            trial += 1
            deadline.start(after: UInt64(timeoutSeconds * 1000)) {
                failure = "trial \(trial) did not arrive in B within \(timeoutSeconds) s"
                finish()
            }
        }

        // Each event in B's folder is a hint to check what is still expected.
        let check = { () -> Void in
            guard failure == nil, !expected.isEmpty || phase == 1 else { return }
            guard arrivedAll() else { return }
            if phase == 1 {
                burstEnd = EventLoop.monotonicNanoseconds()
                finish()
            } else {
                deadline.stop()
                pacing.start(after: pauseMilliseconds) { nextTrial() }
            }
        }
        watcher = try FolderWatcher(loop: loop, path: pathB) { _ in check() }
        backstop.start(after: 200, repeatEvery: 200) { check() }
        pacing.start(after: pauseMilliseconds) { nextTrial() }
        loop.run()
        loop.close()
        if let failure { throw BenchFailure(failure) }
        return Result(latency: samples.summary, p90Milliseconds: samples.percentile(90), trials: samples.count,
                      burstMilliseconds: Double(burstEnd - burstStart) / 1e6, burstFiles: burst)
    }

    private func waitFor(_ seconds: Double, _ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw BenchFailure("timed out waiting for \(what)") }
            usleep(5_000)
        }
    }
}

/// A benchmark that could not complete, with the reason.
public struct BenchFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
