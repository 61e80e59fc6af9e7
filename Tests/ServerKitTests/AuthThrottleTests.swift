@testable import ServerKit
import XCTest

/// The login pace as a pure rule (issue 19, item 5): guesses made at once from many addresses
/// count against the account when they start, so concurrency buys no more guesses.
final class AuthThrottleTests: XCTestCase {
    /// `addresses` clients each guess at one account as fast as they are answered (a wrong
    /// password is answered 1 s after its turn; a refused one when told to come back) for
    /// `seconds`; how many passwords were checked.
    private func guessesChecked(addresses: Int, seconds: UInt64) -> Int {
        var throttle = AuthThrottle()
        var next = [UInt64](repeating: 0, count: addresses)
        // Whether the client's last guess is answered (wrong) at `next`: noted then, in time order.
        var answerDue = [Bool](repeating: false, count: addresses)
        var checked = 0
        while let client = next.indices.min(by: { next[$0] < next[$1] }), next[client] < seconds * 1000 {
            let now = next[client]
            let address = "10.0.0.\(client)"
            if answerDue[client] {
                throttle.failed(address: address, now: now)
                answerDue[client] = false
            }
            let earliest = throttle.earliestSlot(address: address, account: "alice", now: now)
            if earliest - now > LoginGate.maxWaitMilliseconds {
                next[client] = earliest - LoginGate.maxWaitMilliseconds
                continue
            }
            let turn = throttle.reserve(address: address, account: "alice", now: now)
            guard turn < seconds * 1000 else {
                next[client] = .max
                continue
            }
            checked += 1
            next[client] = turn + LoginGate.failureDelayMilliseconds
            answerDue[client] = true
        }
        return checked
    }

    /// A token check strikes with the time it arrived, after the store answered; a failure from
    /// the same address noted meanwhile is later. That earlier `now` crashed the server (UInt64
    /// overflow in `now - last`; ConnectionCloseTests caught it under load).
    func testAStrikeWithAnEarlierNowThanTheLastOneIsCountedNotACrash() {
        var throttle = AuthThrottle()
        for _ in 0..<4 { throttle.failed(address: "10.0.0.1", now: 2_000) }
        let slot = throttle.tokenFailed(address: "10.0.0.1", now: 1_000)
        XCTAssertEqual(slot, 1_000, "its own turn is when it arrived")
        XCTAssertEqual(throttle.earliestSlot(address: "10.0.0.1", account: "alice", now: 1_500), 3_000, "five strikes space the next turn by 2 s")
        _ = throttle.reserve(address: "10.0.0.1", account: "alice", now: 500)
    }

    func testConcurrentGuessesFromManyAddressesKeepTheAccountsPace() {
        let alone = guessesChecked(addresses: 1, seconds: 30)
        let flood = guessesChecked(addresses: 40, seconds: 30)
        // The pace of one account: 5 free, then 0.5 s doubling to 10 s apart.
        XCTAssertLessThanOrEqual(alone, 14, "one address")
        XCTAssertLessThanOrEqual(flood, alone + 5, "40 addresses at once get \(flood) guesses, one gets \(alone)")
    }

    func testLoginsInParallelFromOneHostDoNotSlowEachOtherDown() {
        var throttle = AuthThrottle()
        for _ in 0..<LoginGate.maxAttemptsInFlightPerAddress {
            XCTAssertEqual(throttle.reserve(address: "10.0.0.1", account: "alice", now: 0), 0)
        }
        throttle.succeeded(address: "10.0.0.1", account: "alice")
        XCTAssertEqual(throttle.earliestSlot(address: "10.0.0.1", account: "alice", now: 0), 0)
    }
}
