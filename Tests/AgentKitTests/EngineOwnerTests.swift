import XCTest
@testable import AgentKit
import SyncCore
import SyncProtocol

/// The sync engine's six owners of state (issue 46, item 5), each on its own: what it keeps
/// and what it answers, without an engine, a folder or a server around it.
final class EngineOwnerTests: XCTestCase {
    private let a = RecordKey(collection: "c", id: RecordID("a"))
    private let b = RecordKey(collection: "c", id: RecordID("b"))

    // MARK: PushQueue

    func testAPushRefusedForNowWaitsTwiceAsLongEachTimeUpToAMinute() {
        let pushes = PushQueue()
        pushes.sent(a)
        XCTAssertTrue(pushes.isBusy(a))
        pushes.answered(a)
        XCTAssertFalse(pushes.isBusy(a))
        var delays: [UInt64] = []
        for _ in 0..<8 {
            delays.append(pushes.retryDelayStarting(a))
            XCTAssertTrue(pushes.isBusy(a), "a push waiting for its retry blocks another")
            pushes.retryDue(a)
        }
        XCTAssertEqual(delays, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000])
        pushes.succeeded(a)
        XCTAssertEqual(pushes.retryDelayStarting(a), 1_000, "a success starts the doubling over")
        XCTAssertEqual(pushes.pendingCount, 1)
    }

    func testALostConnectionAnswersNoPushButKeepsRetriesAndRefusals() {
        let pushes = PushQueue()
        pushes.sent(a)
        _ = pushes.retryDelayStarting(b)
        pushes.refuse(a, hash: "h1")
        pushes.connectionLost()
        XCTAssertFalse(pushes.isInFlight(a))
        XCTAssertTrue(pushes.isBusy(b), "a retry survives the connection")
        XCTAssertEqual(pushes.refusedHash(a), "h1", "a refused file stays refused until it changes")
        pushes.succeeded(a)
        XCTAssertNil(pushes.refusedHash(a))
    }

    // MARK: DeleteSettler

    func testMissingFilesSettleAsOneRoundAndFilesThatCameBackAreNotDeleted() {
        let settler = DeleteSettler()
        XCTAssertEqual(settler.missing(a), 1, "the first missing file starts a round")
        XCTAssertNil(settler.missing(b), "the next joins it")
        XCTAssertTrue(settler.back(a))
        XCTAssertFalse(settler.back(a), "it was no longer waiting")
        XCTAssertEqual(settler.settle("c", round: 1), [b.id])
        XCTAssertEqual(settler.pendingCount, 0)
    }

    func testAnOldRoundsTimerDoesNotActOnTheNextRound() {
        let settler = DeleteSettler()
        XCTAssertEqual(settler.missing(a), 1)
        XCTAssertTrue(settler.back(a))
        XCTAssertEqual(settler.missing(b), 2, "every file came back: the next missing one starts a new round")
        XCTAssertNil(settler.settle("c", round: 1))
        XCTAssertEqual(settler.settle("c", round: 2), [b.id])
        _ = settler.missing(a)
        settler.drop("c")
        XCTAssertNil(settler.settle("c", round: 3), "a collection no longer mirrored sends no deletes")
    }

    // MARK: ApplyRetries

    func testARetryThatAddsNoFailureClearsTheCollection() {
        let retries = ApplyRetries()
        XCTAssertTrue(retries.failed("c", seq: 9), "the first failure asks for a retry")
        XCTAssertFalse(retries.failed("c", seq: 7), "later ones do not")
        XCTAssertTrue(retries.hasFailed("c"))
        retries.replayStarting("c")
        XCTAssertFalse(retries.replayEnded("c"))
        XCTAssertFalse(retries.hasFailed("c"))
    }

    func testARetryThatFailsAgainAsksForAnother() {
        let retries = ApplyRetries()
        _ = retries.failed("c", seq: 9)
        retries.replayStarting("c")
        _ = retries.failed("c", seq: 9)
        XCTAssertTrue(retries.replayEnded("c"))
        XCTAssertTrue(retries.hasFailed("c"))
        XCTAssertFalse(retries.replayEnded("other"), "a replay of a collection that never failed asks nothing")
    }

    // MARK: MassDeleteGuard

    func testDeletesPastTheLimitWithinTheWindowAreHeldUntilReleased() {
        let guardian = MassDeleteGuard()
        guardian.pushed("c", count: 8, now: 100)
        XCTAssertFalse(guardian.isMassDelete("c", adding: 2, now: 101, limit: 10, window: 60))
        XCTAssertTrue(guardian.isMassDelete("c", adding: 3, now: 101, limit: 10, window: 60))
        XCTAssertFalse(guardian.isMassDelete("c", adding: 3, now: 200, limit: 10, window: 60), "the earlier deletes left the window")
        XCTAssertEqual(guardian.hold("c", [a.id, b.id]).new, true)
        XCTAssertEqual(guardian.hold("c", [b.id]).count, 2, "holding more adds to the same hold")
        XCTAssertTrue(guardian.isHolding("c"))
        guardian.keepHolding("c", [a.id])
        XCTAssertEqual(guardian.held("c"), [a.id])
        guardian.release("c")
        XCTAssertFalse(guardian.isHolding("c"))
    }

    // MARK: OrderKeeper

    func testOneFlushIsClaimedForManyRewritesAndFailedOnesRetryOnce() {
        let order = OrderKeeper()
        XCTAssertFalse(order.claimFlush(), "nothing is due")
        order.markDirty("c")
        order.markDirty("d")
        XCTAssertTrue(order.claimFlush())
        XCTAssertFalse(order.claimFlush(), "one flush is scheduled at a time")
        order.flushStarted()
        XCTAssertEqual(order.takeDirty(), ["c", "d"])
        XCTAssertFalse(order.hasDirty)
        XCTAssertTrue(order.claimRetry("c"))
        XCTAssertFalse(order.claimRetry("c"), "a retry is waiting already")
        order.retryDue("c")
        XCTAssertEqual(order.takeDirty(), ["c"])
    }

    func testUnansweredMovesAndWaitingEditsAreReadAgainAfterTheConnectionIsLost() {
        let order = OrderKeeper()
        order.moveSent("c")
        XCTAssertTrue(order.hasMovesInFlight("c"))
        order.editWaits("d")
        order.writeAnswered("e")
        XCTAssertFalse(order.hasDirty, "a write in a collection with no waiting edit asks nothing")
        order.connectionLost()
        XCTAssertFalse(order.hasMovesInFlight("c"))
        XCTAssertEqual(order.takeDirty(), ["c", "d"])
        order.setBase("c", OrderBase(hash: "h", ids: [a.id]))
        order.forgetBaseHash("c")
        XCTAssertNil(order.base("c")?.hash)
        XCTAssertEqual(order.base("c")?.ids, [a.id], "the ids are still known")
    }

    // MARK: Subscriptions

    func testAFullReplayTellsWhichRecordsItBroughtAndWhichFilesItWrote() {
        let subscriptions = Subscriptions()
        XCTAssertTrue(subscriptions.startSubscribing("c", full: true))
        XCTAssertFalse(subscriptions.startSubscribing("c", full: true), "one SUB at a time")
        XCTAssertTrue(subscriptions.receives("c"))
        XCTAssertTrue(subscriptions.isReplaying)
        subscriptions.seen("c", a.id)
        subscriptions.wroteInReplay("c", a.id)
        subscriptions.wroteInReplay("c", b.id)
        subscriptions.changedInReplay("c", b.id)
        XCTAssertTrue(subscriptions.wasWrittenInReplay("c", a.id))
        XCTAssertEqual(subscriptions.subscribeAnswered("c"), [a.id], "b changed since its write: the scan reads it")
        XCTAssertEqual(subscriptions.subscribeSucceeded("c"), [a.id])
        XCTAssertTrue(subscriptions.isSubscribed("c"))
        XCTAssertFalse(subscriptions.isReplaying)
    }

    func testLosingAccessEndsTheSubscriptionAndItsCompanionAndAFreshLoginForgetsRoles() {
        let subscriptions = Subscriptions()
        subscriptions.setRole("c", .write)
        _ = subscriptions.startSubscribing("c", full: false)
        XCTAssertNil(subscriptions.subscribeSucceeded("c"), "a replay from a seq brings no full list")
        _ = subscriptions.startSubscribing(Names.conflictsCollection(of: "c"), full: false)
        _ = subscriptions.subscribeSucceeded(Names.conflictsCollection(of: "c"))
        subscriptions.accessRemoved("c")
        XCTAssertFalse(subscriptions.isSubscribed("c"))
        XCTAssertFalse(subscriptions.isSubscribed(Names.conflictsCollection(of: "c")))
        XCTAssertTrue(subscriptions.detach("d"))
        XCTAssertFalse(subscriptions.detach("d"))
        subscriptions.dropped("d")
        XCTAssertFalse(subscriptions.isDetached("d"), "a dropped collection is not waited for")
        subscriptions.setRole("e", .read)
        subscriptions.collectionsListed()
        subscriptions.connectionStarted()
        XCTAssertNil(subscriptions.role("e"))
        XCTAssertFalse(subscriptions.knowsCollections)
    }
}
