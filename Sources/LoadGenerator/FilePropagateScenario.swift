import EventLoop
import Foundation
import PlistFormat
import SyncProtocol

/// `bench propagate --file-kind array|archive`: an app's whole-list file of N elements, attached
/// in agents A and B; each trial saves A's file with one element changed and times until B's
/// file (rebuilt by its agent) holds the change. The file is watched with inotify, like the
/// record-file scenario.
public struct FilePropagateScenario {
    /// The app file's format.
    public enum Kind: String, Sendable {
        case array, archive
    }

    public var folderA: String
    public var folderB: String
    public var fileName: String
    public var kind: Kind
    public var elements: Int
    public var trials: Int

    public init(folderA: String, folderB: String, fileName: String, kind: Kind, elements: Int, trials: Int) {
        (self.folderA, self.folderB, self.fileName, self.kind, self.elements, self.trials) = (folderA, folderB, fileName, kind, elements, trials)
    }

    public struct Result: Sendable {
        public var latency: LatencySummary
        public var trials: Int
        /// From writing the N-element file in A until B's file holds every element.
        public var initialMilliseconds: Double
    }

    private func encode(_ records: [[String: Value]]) -> [UInt8] {
        switch kind {
        case .array: PlistFile.encode(.array(records.map(Value.dictionary)), as: .xml)
        case .archive: KeyedArchive.encode(records, shape: .init(elementClasses: ["BenchItem", "NSObject"]))
        }
    }

    private func decode(_ bytes: [UInt8]) -> [[String: Value]]? {
        guard let root = try? PlistFile.decode(bytes).0 else { return nil }
        switch kind {
        case .array:
            guard case .array(let items) = root else { return nil }
            return items.compactMap { if case .dictionary(let fields) = $0 { fields } else { nil } }
        case .archive:
            return try? KeyedArchive.records(in: root).records
        }
    }

    /// Saves `records` the way an app does (a new file renamed over the old one); the time the
    /// save began, once the app had its bytes ready.
    @discardableResult
    private func save(_ records: [[String: Value]], in folder: String) throws -> UInt64 {
        let temp = folder + "/." + fileName + ".bench"
        let bytes = Data(encode(records))
        let start = EventLoop.monotonicNanoseconds()
        try bytes.write(to: URL(fileURLWithPath: temp))
        guard rename(temp, folder + "/" + fileName) == 0 else { throw PropagateError("cannot save \(fileName)") }
        return start
    }

    /// Runs the loop until B's file satisfies `done`; the wait in nanoseconds from `start`.
    private func waitInB(from start: UInt64, timeoutSeconds: Double, _ done: @escaping ([[String: Value]]) -> Bool) throws -> UInt64 {
        let loop = EventLoop()
        var arrived: UInt64?
        let path = folderB + "/" + fileName
        var checked: [UInt8]?
        let check = {
            // The file is complete when its rename is seen (agents write by rename): the time
            // is taken before this side spends its own time decoding it. The backstop decodes
            // only a file that changed, not to steal the agents' CPU.
            let seen = EventLoop.monotonicNanoseconds()
            guard let bytes = FileManager.default.contents(atPath: path).map(Array.init), bytes != checked else { return }
            checked = bytes
            if let records = decode(bytes), done(records) {
                arrived = seen
                loop.stop()
            }
        }
        let watcher = try FolderWatcher(loop: loop, path: folderB) { event in
            if case .renamed(fileName?) = event { check() } else if case .changed(fileName?) = event { check() }
        }
        let deadline = LoopTimer(loop: loop)
        deadline.start(after: UInt64(timeoutSeconds * 1000)) { loop.stop() }
        let backstop = LoopTimer(loop: loop)
        backstop.start(after: 50, repeatEvery: 50) { check() }
        check()
        if arrived == nil { loop.run() }
        watcher.close()
        deadline.close()
        backstop.close()
        loop.run()
        loop.close()
        guard let arrived else { throw PropagateError("\(fileName) did not arrive in B within \(timeoutSeconds) s") }
        return arrived - start
    }

    public func run(timeoutSeconds: Double = 60) throws -> Result {
        var records = (0..<elements).map { index -> [String: Value] in
            ["id": .string("e\(index)"), "name": .string("element \(index)"), "value": .integer(Int64(index))]
        }
        let first = try save(records, in: folderA)
        let initial = try waitInB(from: first, timeoutSeconds: timeoutSeconds) { $0.count == elements }
        var samples = LatencyHistogram()
        for trial in 0..<trials {
            usleep(20_000)
            let index = (trial * 7919) % elements
            let token = Int64(1_000_000 + trial)
            records[index]["value"] = .integer(token)
            let start = try save(records, in: folderA)
            let id = Value.string("e\(index)")
            samples.add(try waitInB(from: start, timeoutSeconds: timeoutSeconds) { $0.contains { $0["id"] == id && $0["value"] == .integer(token) } })
        }
        return Result(latency: samples.summary, trials: trials, initialMilliseconds: Double(initial) / 1e6)
    }
}

/// A propagation run that could not finish.
public struct PropagateError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
