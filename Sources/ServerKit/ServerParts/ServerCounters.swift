/// What the server counts for STATS and the metrics endpoint: changes committed (in all and
/// per second over the last 16 seconds) and logins.
final class ServerCounters {
    private(set) var changesTotal = 0
    private(set) var loginsSucceeded = 0
    private(set) var loginsFailed = 0
    private var recentChanges: [(second: UInt64, count: Int)] = []

    func committed(_ count: Int, nowMilliseconds: UInt64) {
        changesTotal += count
        let second = nowMilliseconds / 1000
        if recentChanges.last?.second == second {
            recentChanges[recentChanges.count - 1].count += count
        } else {
            recentChanges.append((second, count))
            if recentChanges.count > 16 { recentChanges.removeFirst() }
        }
    }

    /// Changes a second over the last ten whole seconds.
    func changesPerSecond(nowMilliseconds: UInt64) -> Double {
        let now = nowMilliseconds / 1000
        let window = recentChanges.filter { now - $0.second < 10 && $0.second < now }
        return Double(window.reduce(0) { $0 + $1.count }) / 10.0
    }

    func loginSucceeded() {
        loginsSucceeded += 1
    }

    func loginFailed() {
        loginsFailed += 1
    }
}
