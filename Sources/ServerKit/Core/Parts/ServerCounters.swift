/// What the server counts for STATS and the metrics endpoint: changes committed (in all and
/// per second over the last 16 seconds) and logins.
final class ServerCounters {
    private(set) var changesTotal = 0
    private(set) var loginsSucceeded = 0
    private(set) var loginsFailed = 0
    private var recentChanges: [(second: UInt64, count: Int)] = []

    /// `count` changes were committed (and broadcast) at `now` (milliseconds).
    func countChanges(_ count: Int, now: UInt64) {
        changesTotal += count
        let second = now / 1000
        if recentChanges.last?.second == second {
            recentChanges[recentChanges.count - 1].count += count
        } else {
            recentChanges.append((second, count))
            if recentChanges.count > 16 { recentChanges.removeFirst() }
        }
    }

    /// Changes a second over the last ten whole seconds.
    func changesPerSecond(now: UInt64) -> Double {
        let now = now / 1000
        // `second < now` first: a later second must not reach the subtraction.
        let window = recentChanges.filter { $0.second < now && now - $0.second < 10 }
        return Double(window.reduce(0) { $0 + $1.count }) / 10.0
    }

    func loginSucceeded() {
        loginsSucceeded += 1
    }

    func loginFailed() {
        loginsFailed += 1
    }
}
