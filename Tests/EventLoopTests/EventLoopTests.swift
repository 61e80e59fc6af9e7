import Foundation
import XCTest
@testable import EventLoop

final class EventLoopTests: XCTestCase {
    /// An echo server and a client on one loop over real TCP; every handle is closed at the
    /// end, so `close()` (uv_loop_close) succeeds only if nothing leaked.
    func testEchoOverRealTCPLeaksNoHandle() throws {
        let loop = EventLoop()
        var received: [UInt8] = []
        var serverSide: TCPConnection?
        let listener = try TCPListener(loop: loop, address: SocketAddress(host: "127.0.0.1", port: 0)) { connection in
            serverSide = connection
            connection.onData = { connection.write($0) }
            connection.onEnd = { _ in connection.closeAfterWriting() }
            connection.startReading()
        }
        XCTAssertNotEqual(listener.address.port, 0)
        let message = Array(repeating: Array("hello over libuv\n".utf8), count: 10_000).flatMap { $0 }
        TCPConnection.connect(on: loop, to: listener.address) { result in
            guard case .success(let client) = result else { return XCTFail("connect failed") }
            client.onData = { bytes in
                received += bytes
                if received.count == message.count {
                    client.close()
                    listener.close()
                }
            }
            client.startReading()
            client.write(message)
        }
        loop.run()
        XCTAssertEqual(received, message)
        XCTAssertNotNil(serverSide)
        XCTAssertTrue(loop.close(), "a handle or request leaked")
    }

    /// A doorbell rung from another thread runs its action on the loop's thread (how a test
    /// stops a server or agent it runs inside its process); a ring after `close` does nothing,
    /// and the loop closes with nothing left open.
    func testADoorbellRungFromAnotherThreadRunsOnTheLoopThread() {
        let loop = EventLoop()
        let loopThread = pthread_self()
        let keepAlive = LoopTimer(loop: loop)
        keepAlive.start(after: 10_000) { XCTFail("the doorbell did not ring within 10 s") }
        var rangOnLoopThread: Bool?
        var doorbell: LoopDoorbell!
        doorbell = LoopDoorbell(loop: loop) {
            rangOnLoopThread = pthread_equal(pthread_self(), loopThread) != 0
            keepAlive.close()
            doorbell.close()
        }
        let ringer = Thread { [doorbell] in doorbell!.ring() }
        ringer.start()
        loop.run()
        XCTAssertEqual(rangOnLoopThread, true)
        doorbell.ring()
        XCTAssertTrue(loop.close(), "the doorbell's handle was left open")
    }

    func testBlockingWorkCompletesOnLoopThread() {
        let loop = EventLoop()
        let loopThread = pthread_self()
        var results: [Int] = []
        for value in 1...8 {
            loop.runBlocking({ value * value }, then: { square in
                XCTAssertTrue(pthread_equal(pthread_self(), loopThread) != 0)
                results.append(square)
            })
        }
        loop.run()
        XCTAssertEqual(results.sorted(), [1, 4, 9, 16, 25, 36, 49, 64])
        XCTAssertTrue(loop.close())
    }

    func testTimerFiresAndRepeats() {
        let loop = EventLoop()
        let timer = LoopTimer(loop: loop)
        var fired = 0
        timer.start(after: 1, repeatEvery: 1) {
            fired += 1
            if fired == 3 { timer.close() }
        }
        loop.run()
        XCTAssertEqual(fired, 3)
        XCTAssertTrue(loop.close())
    }

    /// End-of-turn work runs once, after the callbacks of its turn (so it sees everything they
    /// queued) and before the loop next waits, including work that end-of-turn work schedules.
    func testEndOfTurnWorkRunsAfterTheTurnsCallbacks() {
        let loop = EventLoop()
        var log: [String] = []
        loop.runBlocking({ 1 }, then: { _ in
            loop.atEndOfTurn {
                log.append("end of turn sees \(log.count) callback")
                loop.atEndOfTurn { log.append("scheduled by end of turn") }
            }
            log.append("completion")
        })
        loop.run()
        XCTAssertEqual(log, ["completion", "end of turn sees 1 callback", "scheduled by end of turn"])
        XCTAssertTrue(loop.close())
    }

    /// A `closeAfterWriting` whose flush drains at once calls `onDrain`, and a drain handler
    /// that closes after writing again (HTTP's serveNext does) must not start a second
    /// shutdown: its grace timer was never cancelled and fired into a freed connection
    /// (issue 29). Every handle is closed at the end, so `close()` fails on an orphaned timer.
    func testCloseAfterWritingCalledAgainFromTheDrainLeavesNoTimer() throws {
        let loop = EventLoop()
        var serverClosed = false
        var received: [UInt8] = []
        var clientDone = false
        let listener = try TCPListener(loop: loop, address: SocketAddress(host: "127.0.0.1", port: 0)) { connection in
            connection.onDrain = { connection.closeAfterWriting() }
            connection.onClose = { serverClosed = true }
            connection.write("bye\n")
            connection.closeAfterWriting()
        }
        TCPConnection.connect(on: loop, to: listener.address) { result in
            guard case .success(let client) = result else { return XCTFail("connect failed") }
            client.onData = { received += $0 }
            client.onEnd = { _ in
                clientDone = true
                client.close()
            }
            client.startReading()
        }
        let deadline = Date().addingTimeInterval(5)
        while !(serverClosed && clientDone), Date() < deadline { loop.runOnce(wait: false) }
        listener.close()
        loop.runOnce(wait: false)
        XCTAssertTrue(serverClosed && clientDone)
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "bye\n")
        XCTAssertTrue(loop.close(), "a second grace timer was left running")
    }

    /// Shared bytes go out without a copy for each connection, in order with the connection's
    /// own writes, however the kernel takes them (megabytes, so some wait in write requests).
    func testSharedBytesInterleaveWithOwnWritesInOrderOnEveryConnection() throws {
        let loop = EventLoop()
        let shared = SharedBytes(Array((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
        var expected: [UInt8] = []
        var servers: [TCPConnection] = []
        let listener = try TCPListener(loop: loop, address: SocketAddress(host: "127.0.0.1", port: 0)) { connection in
            servers.append(connection)
            for round in 0..<6 {
                connection.write("round \(round)\n")
                connection.write(shared, range: (round * 1000)..<shared.count)
            }
            connection.closeAfterWriting()
        }
        for round in 0..<6 { expected += Array("round \(round)\n".utf8) + shared[(round * 1000)..<shared.count] }
        var received: [[UInt8]] = [[], []]
        var ended = 0
        for index in 0..<2 {
            TCPConnection.connect(on: loop, to: listener.address) { result in
                guard case .success(let client) = result else { return XCTFail("connect failed") }
                client.onData = { received[index] += $0 }
                client.onEnd = { _ in
                    ended += 1
                    client.close()
                    if ended == 2 { listener.close() }
                }
                client.startReading()
            }
        }
        loop.run()
        XCTAssertEqual(received[0].count, expected.count)
        XCTAssertTrue(received[0] == expected && received[1] == expected, "each connection gets its writes in order")
        XCTAssertEqual(servers.count, 2)
        XCTAssertTrue(loop.close(), "a handle or request leaked")
    }

    func testConnectFailureIsReported() {
        let loop = EventLoop()
        var failure: LoopError?
        // Port 1 on loopback has no listener on these machines.
        TCPConnection.connect(on: loop, to: SocketAddress(host: "127.0.0.1", port: 1)) { result in
            if case .failure(let error) = result { failure = error }
        }
        loop.run()
        XCTAssertNotNil(failure)
        XCTAssertTrue(loop.close())
    }

    func testAddressParsing() {
        XCTAssertEqual(SocketAddress(parsing: "127.0.0.1:7420"), SocketAddress(host: "127.0.0.1", port: 7420))
        XCTAssertEqual(SocketAddress(parsing: "[::1]:80"), SocketAddress(host: "::1", port: 80))
        XCTAssertEqual(SocketAddress(parsing: "localhost:1"), SocketAddress(host: "127.0.0.1", port: 1))
        XCTAssertNil(SocketAddress(parsing: "nohost"))
        XCTAssertNil(SocketAddress(parsing: ":80"))
        XCTAssertNil(SocketAddress(parsing: "h:99999"))
    }
}

final class FolderWatcherTests: XCTestCase {
    /// A fresh folder under watch, removed at the test's end; `events` is what the watch reported.
    private final class WatchedFolder {
        let path = NSTemporaryDirectory() + "watch-" + UUID().uuidString
        let loop = EventLoop()
        var events: [FolderWatcher.Event] = []
        private(set) var watcher: FolderWatcher!

        init() throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            watcher = try FolderWatcher(loop: loop, path: path) { [unowned self] in events.append($0) }
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    func testReportsCreatedAndWrittenFilesByName() throws {
        let folder = try WatchedFolder()
        let timer = LoopTimer(loop: folder.loop)
        timer.start(after: 20) {
            _ = FileManager.default.createFile(atPath: folder.path + "/Ada.plist", contents: Data("x".utf8))
            timer.start(after: 50) {
                folder.watcher.close()
                timer.close()
            }
        }
        folder.loop.run()
        XCTAssertTrue(folder.events.contains(.renamed("Ada.plist")), "\(folder.events)")
        XCTAssertTrue(folder.loop.close())
    }

    /// A folder removed and made again often gets the same inode back (ext4 does at once), so
    /// the watch must know from its own events that its folder went, not from the inode.
    func testAWatchKnowsItsFolderWasRemovedEvenWhenTheNewFolderHasTheSameInode() throws {
        let folder = try WatchedFolder()
        XCTAssertTrue(folder.watcher.watchesTheFolderAtItsPath)
        try FileManager.default.removeItem(atPath: folder.path)
        let deadline = Date().addingTimeInterval(5)
        while folder.events.isEmpty && Date() < deadline { folder.loop.runOnce(wait: false); usleep(1_000) }
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        XCTAssertFalse(folder.events.isEmpty, "the removal was reported")
        XCTAssertFalse(folder.watcher.watchesTheFolderAtItsPath, "\(folder.events)")
        folder.watcher.close()
        folder.loop.runOnce(wait: false)
        XCTAssertTrue(folder.loop.close())
    }

    func testMissingFolderIsAnError() {
        let loop = EventLoop()
        XCTAssertThrowsError(try FolderWatcher(loop: loop, path: "/nonexistent/\(UUID())") { _ in })
        loop.runOnce(wait: false)
        XCTAssertTrue(loop.close())
    }
}

/// The dedicated worker thread (password hashing) and how a connection ends when its peer
/// vanishes mid-write.
final class WorkerThreadTests: XCTestCase {
    func testJobsRunInOrderOffTheLoopAndAnswerOnIt() {
        let loop = EventLoop()
        let worker = WorkerThread(loop: loop)
        let loopThread = pthread_self()
        var results: [Int] = []
        var ranOnLoop = true
        for index in 0..<5 {
            worker.submit({ () -> Int in
                usleep(2_000)
                return index * index
            }, then: { value in
                ranOnLoop = ranOnLoop && pthread_equal(pthread_self(), loopThread) != 0
                results.append(value)
                if results.count == 5 { worker.close() }
            })
        }
        XCTAssertEqual(worker.pendingCount, 5)
        loop.run()
        XCTAssertEqual(results, [0, 1, 4, 9, 16])
        XCTAssertTrue(ranOnLoop)
        XCTAssertTrue(loop.close(), "a handle leaked")
    }

    func testAnIdleWorkerDoesNotKeepTheLoopRunning() {
        let loop = EventLoop()
        let worker = WorkerThread(loop: loop)
        loop.run()  // returns at once: nothing is pending
        worker.close()
        XCTAssertTrue(loop.close())
    }
}
