import Foundation
import XCTest

/// Issue 19, item 3: connections that never log in and never read used to cost the server up
/// to 4 MiB of replies each (300 of them pipelining `h HELLO 1`: +1.23 GB, and a logged-in
/// client's PING went unanswered for 8 s). Before login a connection now holds at most a few
/// dozen KiB, and all connections together stay within `--max-buffered-bytes`.
final class AnonymousLoadTests: XCTestCase {
    func testConnectionsThatNeverLogInNorReadCannotGrowTheServer() throws {
        let server = try TestServer.running([], users: [("alice", "pw")])
        let alice = try server.login("alice", "pw")
        try alice.expect("w PING", equals: "w OK PONG")
        let idle = server.residentKilobytes()

        let hellos = Array(String(repeating: "h HELLO 1\n", count: 20_000).utf8)
        let attackers = try (0..<300).map { index in
            try LineClient(port: server.port, source: "127.0.2.\(index % 200 + 1)", receiveBufferBytes: 4096)
        }
        // Alice pings all through the flood, from a thread of her own.
        let latencies = PingLatencies()
        let pinger = Thread {
            var index = 0
            while !latencies.isStopped {
                let started = Date()
                guard (try? alice.expect("p\(index) PING", equals: "p\(index) OK PONG")) != nil else { return latencies.failed() }
                latencies.add(Date().timeIntervalSince(started))
                index += 1
                usleep(10_000)
            }
            latencies.finished()
        }
        pinger.start()
        // Every attacker writes as much as its socket takes, round after round, for 4 s.
        var offsets = [Int](repeating: 0, count: attackers.count)
        let deadline = Date().addingTimeInterval(4)
        while Date() < deadline {
            var progressed = false
            for (index, attacker) in attackers.enumerated() where offsets[index] < hellos.count {
                let sent = hellos[offsets[index]...].withUnsafeBytes {
                    send(attacker.fileDescriptor, $0.baseAddress, min($0.count, 65_536), Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if sent > 0 {
                    offsets[index] += sent
                    progressed = true
                }
            }
            if !progressed { usleep(20_000) }
        }
        latencies.stop()
        XCTAssertTrue(latencies.wait(seconds: 30), "alice's pings did not finish")
        XCTAssertGreaterThan(latencies.count, 100, "pings during the flood")
        let grown = server.peakResidentKilobytes() - idle
        let sent = offsets.reduce(0, +)
        XCTAssertGreaterThan(sent, 300 * 65_536, "the attackers got their requests out (\(sent) bytes)")
        XCTAssertLessThan(grown, 256 * 1024, "the server grew \(grown / 1024) MiB for connections that never logged in")
        let p99 = latencies.percentile(0.99)
        XCTAssertFalse(latencies.hasFailed, "a ping went unanswered")
        XCTAssertLessThan(p99, 0.05, "alice's PING p99 during the flood: \(Int(p99 * 1000)) ms")
        print("slowest pings (ms): \(latencies.slowest(10).map { Int($0 * 1000) })")
        print("anonymous flood: \(sent / 1_048_576) MiB sent by 300 connections; server peak +\(grown / 1024) MiB; PING p99 \(String(format: "%.1f", p99 * 1000)) ms")
        try server.connect().expect("q PING", equals: "q OK PONG")
        _ = attackers
    }

    /// Buffered bytes of logged-in connections count against the budget too: the slowest
    /// reader is closed once all connections together hold more than `--max-buffered-bytes`.
    func testTheSlowestReaderGoesWhenConnectionsHoldMoreThanTheBudget() throws {
        let server = try LiveServer.running { $0.maxBufferedBytes = 2 << 20 }
        let writer = try server.login("alice", "pw")
        try writer.expect("c CREATE c", equals: "c OK CREATE c")
        try writer.expect("p PUT c big 0 {\"v\":\"\(String(repeating: "x", count: 200_000))\"}", prefix: "p OK PUT c big 1 ")
        // Three readers ask for the big record again and again and read nothing: each holds
        // more than a MiB of replies (the kernel takes a few more), together over the 2 MiB budget.
        let readers = try (0..<3).map { _ in try LineClient(port: server.port, receiveBufferBytes: 4096) }
        let gets = Array(String(repeating: "g GET c big\n", count: 200).utf8)
        for reader in readers {
            try reader.expect("h HELLO 1", prefix: "h OK HELLO 1 ")
            try reader.expect("a AUTH alice pw", equals: "a OK AUTH alice")
        }
        for reader in readers { _ = reader.sendWithoutBlocking(gets, seconds: 1) }
        eventually(10, "no reader was closed: \(server.log())") { server.log().contains("connections hold more than --max-buffered-bytes") }
        XCTAssertTrue(server.log().contains("reason=slow"), server.log())
        try writer.expect("z PING", equals: "z OK PONG")
    }
}

/// PING round trips measured on one thread and read on another.
private final class PingLatencies: @unchecked Sendable {
    private let lock = NSCondition()
    private var seconds: [Double] = []
    private(set) var hasFailed = false
    private var done = false
    private var stopped = false

    var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }
    var count: Int { lock.lock(); defer { lock.unlock() }; return seconds.count }

    func add(_ value: Double) {
        lock.lock()
        seconds.append(value)
        lock.unlock()
    }

    /// The flood is over: the pinger ends after its current ping.
    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    func finished() {
        lock.lock()
        done = true
        lock.broadcast()
        lock.unlock()
    }

    func failed() {
        lock.lock()
        hasFailed = true
        done = true
        lock.broadcast()
        lock.unlock()
    }

    /// Waits until every ping is answered (or one failed).
    func wait(seconds timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while !done { if !lock.wait(until: deadline) { return false } }
        return true
    }

    func slowest(_ count: Int) -> [Double] {
        lock.lock()
        defer { lock.unlock() }
        return Array(seconds.sorted().suffix(count))
    }

    func percentile(_ fraction: Double) -> Double {
        lock.lock()
        defer { lock.unlock() }
        let sorted = seconds.sorted()
        guard !sorted.isEmpty else { return .infinity }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }
}
