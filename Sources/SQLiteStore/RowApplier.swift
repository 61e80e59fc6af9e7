import Foundation
import SQLiteKit
import SyncCore

/// Takes turns on the commit connection: commits, and between them the chunks that write
/// waiting edits to their rows (`RecordWriter.applyBehind`), on a thread of its own.
///
/// While commits come, one chunk follows each commit, and a drain begins once
/// `drainThreshold` edits wait; when no commit has come for `idleSeconds`, the rest is written
/// chunk after chunk. Edits waiting past `maxWaiting` (commits outrun the drain) make the
/// commit write a chunk first. With `automatic` off nothing is written behind unless
/// `applyBehind()` is called (the simulation, which chooses when).
final class RowApplier: @unchecked Sendable {
    static let drainThreshold = 32_768
    static let maxWaiting = 4 * drainThreshold
    static let chunk = 1_024
    static let idleSeconds = 0.2

    private let writer: RecordWriter
    /// The commit connection: a commit or a chunk at a time.
    private let turn = NSLock()
    private let wake = NSCondition()
    /// Commits after which a chunk is due (a drain is under way or should begin).
    private var commits = 0
    /// When the last commit ended (`DispatchTime` nanoseconds).
    private var lastCommit: UInt64 = 0
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)
    private let automatic: Bool

    init(writer: RecordWriter, automatic: Bool) {
        self.writer = writer
        self.automatic = automatic
        guard automatic else { return }
        let thread = Thread { [self] in run() }
        thread.name = "plistsync-rows"
        thread.start()
    }

    func commit(_ operations: [StoreOperation]) throws(StoreError) -> [StoreOutcome] {
        turn.lock()
        defer { turn.unlock() }
        while writer.pending.waitingCount >= Self.maxWaiting, try writer.applyBehind(limit: Self.chunk, threshold: Self.drainThreshold) {}
        let outcomes = try writer.commit(operations)
        if automatic {
            // Only a commit that leaves work wakes the thread: a wakeup a commit would cost
            // every small commit a thread handoff.
            let due = writer.chunkIsDue(threshold: Self.drainThreshold)
            wake.lock()
            lastCommit = DispatchTime.now().uptimeNanoseconds
            if due {
                commits += 1
                wake.signal()
            }
            wake.unlock()
        }
        return outcomes
    }

    /// Writes every waiting edit to its row now.
    func applyBehind() throws(StoreError) {
        turn.lock()
        defer { turn.unlock() }
        while try writer.applyBehind(limit: Self.chunk, threshold: 1) {}
    }

    /// Stops the thread, after the chunk it may be writing.
    func stop() {
        guard automatic else { return }
        wake.lock()
        stopped = true
        wake.signal()
        wake.unlock()
        finished.wait()
    }

    private func run() {
        var more = false
        while true {
            wake.lock()
            if !more, commits == 0, !stopped { _ = wake.wait(until: Date(timeIntervalSinceNow: Self.idleSeconds)) }
            let afterCommit = commits > 0
            commits = 0
            let stop = stopped
            let idle = DispatchTime.now().uptimeNanoseconds - lastCommit >= UInt64(Self.idleSeconds * 1e9)
            wake.unlock()
            if stop { break }
            guard afterCommit || idle else {
                more = false
                continue
            }
            turn.lock()
            do {
                more = try writer.applyBehind(limit: Self.chunk, threshold: idle ? 1 : Self.drainThreshold)
            } catch {
                // The rows wait in the log; the next turn tries again (a commit meets the same
                // trouble and reports it).
                more = false
            }
            turn.unlock()
            // While commits come, the next chunk waits for the next commit; idle, it goes on.
            if !idle { more = false }
        }
        finished.signal()
    }
}
