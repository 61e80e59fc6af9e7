/// Slows down password guessing: each failed login from an address doubles the delay before
/// the next failure is answered, up to a cap; a success or a quiet period forgets the address.
struct AuthThrottle {
    static let baseDelayMilliseconds: UInt64 = 200
    static let maxDelayMilliseconds: UInt64 = 10_000
    static let forgetAfterMilliseconds: UInt64 = 15 * 60 * 1000

    private var failures: [String: (count: Int, last: UInt64)] = [:]

    /// Records a failure and returns how long to wait before answering it.
    mutating func failed(from address: String, now: UInt64) -> UInt64 {
        if failures.count > 10_000 { failures = failures.filter { now - $0.value.last < Self.forgetAfterMilliseconds } }
        var entry = failures[address] ?? (0, now)
        if now - entry.last > Self.forgetAfterMilliseconds { entry.count = 0 }
        entry.count += 1
        entry.last = now
        failures[address] = entry
        let shift = UInt64(min(entry.count - 1, 16))
        return min(Self.baseDelayMilliseconds << shift, Self.maxDelayMilliseconds)
    }

    mutating func succeeded(from address: String) {
        failures[address] = nil
    }
}
