@testable import ServerKit
import SyncCore
import XCTest

/// The session's owners as plain values: reply order across commits that answer out of order,
/// subscriptions carried through a rename, the one step a session waits for.
final class SessionPartsTests: XCTestCase {
    private func ok(_ tag: String) -> ServerOutput { .ok(tag: tag, .pong) }

    func testRepliesLeaveInRequestOrderWhateverOrderTheirCommitsAnswerIn() {
        let replies = ReplyOrder()
        let first = replies.reserve(bytes: 10)
        let second = replies.reserve(bytes: 20)
        let third = replies.reserve(bytes: 30)
        XCTAssertEqual(replies.writesInFlight, 3)
        XCTAssertEqual(replies.bytesInFlight, 60)
        replies.fill(third, with: ok("c"))
        replies.fill(second, with: ok("b"))
        XCTAssertNil(replies.takeReady(), "the first write is not answered: nothing may go out")
        XCTAssertEqual(replies.bytesInFlight, 10)
        replies.fill(first, with: ok("a"))
        XCTAssertEqual([replies.takeReady(), replies.takeReady(), replies.takeReady(), replies.takeReady()], [ok("a"), ok("b"), ok("c"), nil])
        XCTAssertTrue(replies.isEmpty)
        XCTAssertEqual(replies.reserve(bytes: 1), 0, "slots start again once all went out")
    }

    func testASubscriptionAdvancesOnlyForwardAndKeepsItsSeqThroughARename() {
        let subscriptions = SubscribedCollections()
        XCTAssertNil(subscriptions.advance("notes", to: 5), "not subscribed")
        subscriptions.start("notes", through: 3)
        XCTAssertEqual(subscriptions.advance("notes", to: 5), 3)
        XCTAssertNil(subscriptions.advance("notes", to: 5), "it has 5 already")
        XCTAssertTrue(subscriptions.rename("notes", to: "jottings"))
        XCTAssertFalse(subscriptions.rename("notes", to: "other"))
        XCTAssertEqual(subscriptions.advance("jottings", to: 9), 5)
        XCTAssertEqual(subscriptions.endAll(), ["jottings"])
        XCTAssertTrue(subscriptions.isEmpty)
        XCTAssertFalse(subscriptions.end("jottings"))
    }

    func testAReadsAnswerEndsTheWaitAndACancelledOneIsNotTaken() {
        let wait = SessionWait()
        var answered = 0
        wait.forRead { _ in answered += 1 }
        XCTAssertTrue(wait.isWaiting)
        wait.takeRead()?(.failure(.unavailable))
        XCTAssertFalse(wait.isWaiting)
        XCTAssertNil(wait.takeRead(), "one answer a read")
        wait.forLogin(tag: "a", user: "alice")
        wait.queue(.replay(tag: "s", collection: "notes", since: 4))
        wait.cancel()
        XCTAssertNil(wait.takeLogin())
        XCTAssertNil(wait.nextPage)
        XCTAssertEqual(answered, 1)
    }

    func testACommitsOutcomeGoesToItsOwnHandlerOnce() {
        let commits = CommitTickets()
        var outcomes: [String] = []
        let first = commits.issue { _ in outcomes.append("first") }
        let second = commits.issue { _ in outcomes.append("second") }
        commits.complete(second, .success(.done))
        commits.complete(first, .success(.done))
        commits.complete(first, .success(.done))
        XCTAssertEqual(outcomes, ["second", "first"])
    }
}
