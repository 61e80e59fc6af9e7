import EventLoop
import Foundation
import SyncClient
import SyncCore

/// `bench scale`, moves: two records of a populated collection moved again and again BEFORE
/// the same record, one MOVE at a time, with a subscriber listening: how long each MOVE takes
/// (a whole-collection re-key stalls it), how many CHANGEs reach the subscriber per move, and
/// whether the subscriber is still there at the end.
public struct GapMoveScenario {
    public var collection: String
    /// The ids moved (alternately) and the one they go before.
    public var moving: [String]
    public var anchor: String
    public var moves: Int

    public init(collection: String, moving: [String], anchor: String, moves: Int) {
        self.collection = collection
        self.moving = moving
        self.anchor = anchor
        self.moves = moves
    }

    public struct Result: Sendable {
        public var latency: LatencySummary
        public var changesPerMove: Double
        /// The `* BYE` reason the subscriber was sent, if it was cut off.
        public var subscriberCutOff: String?
    }

    public func run(against target: BenchTarget) throws -> Result {
        let loop = EventLoop()
        var mover: ClientConnection?
        var subscriber: ClientConnection?
        var latencies = LatencyHistogram()
        var revs: [String: Int64] = [:]
        var changes = 0
        var cutOff: String?
        var lastMoveSeq: Int64 = 0
        var lastSeenSeq: Int64 = 0
        var done = 0
        var failure: String?

        func finishIfCaughtUp() {
            if done == moves, cutOff != nil || lastSeenSeq >= lastMoveSeq { loop.stop() }
        }
        func move(_ index: Int) {
            guard index < moves, let mover else { return finishIfCaughtUp() }
            let id = moving[index % moving.count]
            let started = EventLoop.monotonicNanoseconds()
            func send(from rev: Int64) {
                mover.send(.move(collection: collection, id: id, baseRev: rev, placement: .before(anchor))) { line in
                    switch line.reply {
                    case .ok(_, .written(_, _, _, let rev, let seq), _):
                        latencies.add(EventLoop.monotonicNanoseconds() - started)
                        revs[id] = rev
                        lastMoveSeq = seq
                        done += 1
                        move(index + 1)
                    case .error(_, .conflict, _, let current?):
                        // A re-key raised this record's rev.
                        send(from: current.rev)
                    default:
                        failure = "MOVE answered \(line.text)"
                        loop.stop()
                    }
                }
            }
            send(from: revs[id] ?? 1)
        }
        func startMoving() {
            // The moved records' revs as they are now.
            var known = 0
            for id in moving {
                mover?.send(.get(collection: collection, id: id)) { line in
                    guard case .ok(_, .record(_, _, let rev, _), _) = line.reply else {
                        failure = "GET \(id) answered \(line.text)"
                        return loop.stop()
                    }
                    revs[id] = rev
                    known += 1
                    if known == moving.count { move(0) }
                }
            }
        }
        target.open(on: loop) { client in
            guard let client else {
                failure = "cannot log in"
                return loop.stop()
            }
            subscriber = client
            client.onUntagged = { line in
                switch line.event {
                case .change(_, let seq, _, _)?:
                    changes += 1
                    lastSeenSeq = seq
                    finishIfCaughtUp()
                case .bye(let reason)?:
                    cutOff = reason.rawValue
                    finishIfCaughtUp()
                default: break
                }
            }
            client.subscribeFromNow(collection) { refused in
                if let refused {
                    failure = refused
                    return loop.stop()
                }
                target.open(on: loop) { client in
                    mover = client
                    startMoving()
                }
            }
        }
        let deadline = LoopTimer(loop: loop)
        deadline.start(after: 3_600_000) { loop.stop() }
        loop.run()
        deadline.close()
        mover?.close()
        subscriber?.close()
        loop.runOnce(wait: false)
        loop.close()
        if let failure { throw BenchFailure(failure) }
        return Result(latency: latencies.summary, changesPerMove: Double(changes) / Double(max(1, done)), subscriberCutOff: cutOff)
    }
}
