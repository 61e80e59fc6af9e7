import Foundation
import LoadGenerator

/// `plistsync bench fanout-subscribers` children: each connects its share of a fan-out's
/// subscribers, prints `ready`, and at the end one `report` line (see `SubscriberReport`).
final class SubscriberProcesses: SubscriberHelpers {
    private let target: BenchTarget
    private let shares: [Int]
    private let messages: Int
    private var children: [(process: Process, output: FileHandle)] = []

    init(target: BenchTarget, shares: [Int], messages: Int) {
        self.target = target
        self.shares = shares
        self.messages = messages
    }

    func start(since: String) throws {
        for share in shares {
            let process = Process()
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["bench", "fanout-subscribers", "--server", "\(target.address)", "--user", target.user,
                                 "--password", target.password, "--subscribers", String(share), "--messages", String(messages),
                                 "--since", since] + (target.tls?.pinnedFingerprint.map { ["--fingerprint", $0] } ?? [])
            process.standardOutput = output
            try process.run()
            BenchChildren.track(process)
            children.append((process, output.fileHandleForReading))
        }
        for child in children where try Self.nextLine(of: child.output) != "ready" {
            for other in children where other.process.isRunning { other.process.terminate() }
            throw RuntimeError("a fan-out helper process could not subscribe")
        }
    }

    func reports() throws -> [SubscriberReport] {
        defer { for child in children { child.process.waitUntilExit() } }
        return try children.map { child in
            guard let line = try Self.nextLine(of: child.output), let report = SubscriberReport(line: line) else {
                throw RuntimeError("a fan-out helper process did not receive every change")
            }
            return report
        }
    }

    /// Reads up to the next newline (blocking); nil at end of output.
    private static func nextLine(of handle: FileHandle) throws -> String? {
        var bytes: [UInt8] = []
        while true {
            guard let chunk = try handle.read(upToCount: 1), let byte = chunk.first else {
                return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
            }
            if byte == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}
