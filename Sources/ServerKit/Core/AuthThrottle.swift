/// Paces login attempts before any password is hashed, per address and per account.
///
/// Each failure is a strike against its address; each attempt is one against its account from
/// the moment it starts (a success clears the account's), so guesses at one account made at once
/// from many addresses pace each other as guesses made one after another do. A key with a few
/// strikes is
/// not slowed (typos cost nothing); past that, each further attempt is given a turn spaced after
/// the previous one by a delay that doubles with each strike, up to a cap. Attempts in parallel
/// get successive turns (the login gate also caps how many run at once per address), so opening
/// more connections buys no more guesses. Strikes are forgotten after a quiet period. A success
/// clears the account's strikes but never the address's: logging in to one's own account must
/// not reset the pace of guesses from that address at other accounts.
///
/// The per-account pace applies only to addresses the account has not logged in from before
/// (Dovecot's and Keycloak's pairing): an attacker guessing at `alice` from elsewhere slows down
/// every stranger's attempts at `alice`, but not alice on her usual machine.
struct AuthThrottle {
    /// Strikes a key may have before attempts are spaced out (typos cost nothing).
    static let freeStrikesPerAddress = 3
    static let freeStrikesPerAccount = 5
    static let baseDelayMilliseconds: UInt64 = 500
    static let maxDelayMilliseconds: UInt64 = 10_000
    static let forgetAfterMilliseconds: UInt64 = 15 * 60 * 1000
    /// Bound on remembered keys, so that the throttle's own memory cannot be flooded.
    static let maxEntries = 50_000
    /// Bound on addresses remembered as an account's own.
    static let knownAddressesPerAccount = 16

    private struct Pace {
        var strikes = 0
        var nextSlot: UInt64 = 0
        var last: UInt64 = 0
    }

    private var addresses: [String: Pace] = [:]
    private var accounts: [String: Pace] = [:]
    private var knownAddresses: [String: [String]] = [:]

    /// The earliest time an attempt from `address` at `account` could be checked, reserving
    /// nothing.
    func earliestSlot(address: String, account: String, now: UInt64) -> UInt64 {
        func next(_ pace: Pace?) -> UInt64 {
            guard let pace, Self.elapsed(since: pace.last, now: now) <= Self.forgetAfterMilliseconds else { return now }
            return max(now, pace.nextSlot)
        }
        var slot = next(addresses[address])
        if !isKnown(address, for: account) { slot = max(slot, next(accounts[account])) }
        return slot
    }

    /// The earliest time an attempt from `address` that names no account (an invitation's
    /// secret) could be checked.
    func earliestSlot(address: String, now: UInt64) -> UInt64 {
        guard let pace = addresses[address], Self.elapsed(since: pace.last, now: now) <= Self.forgetAfterMilliseconds else { return now }
        return max(now, pace.nextSlot)
    }

    /// Reserves the time at which an attempt from `address` at `account` may be checked (now or
    /// later), and counts the attempt as a strike against the account from now on: 40
    /// addresses guessing at once got 38–68 checks in 30 s when only failures that had ended
    /// counted. (The address's strike waits for the failure: one host's parallel logins, at most
    /// `LoginGate.maxAttemptsInFlightPerAddress` at a time, must not slow each other down.)
    mutating func reserve(address: String, account: String, now: UInt64) -> UInt64 {
        var slot = Self.take(&addresses, address, now: now, free: Self.freeStrikesPerAddress)
        if !isKnown(address, for: account) {
            slot = max(slot, Self.take(&accounts, account, now: now, free: Self.freeStrikesPerAccount))
        }
        Self.strike(&accounts, account, now: now)
        return slot
    }

    /// Whether `account` has logged in from `address` lately (its own pace then does not apply,
    /// and its password is hashed before strangers').
    func isKnown(_ address: String, for account: String) -> Bool {
        knownAddresses[account]?.contains(address) ?? false
    }

    /// An attempt from `address` was wrong (its account's strike was counted when it started).
    mutating func failed(address: String, now: UInt64) {
        Self.strike(&addresses, address, now: now)
    }

    /// An attempt from `address` at `account` succeeded: the account's strikes are cleared.
    mutating func succeeded(address: String, account: String) {
        accounts[account] = nil
        var known = knownAddresses[account] ?? []
        known.removeAll { $0 == address }
        known.append(address)
        if known.count > Self.knownAddressesPerAccount { known.removeFirst() }
        if knownAddresses[account] == nil, knownAddresses.count >= Self.maxEntries { knownAddresses.removeAll() }
        knownAddresses[account] = known
    }

    /// A token login failed: it counts against the address only (there is no account to name);
    /// returns the turn at which the failure may be answered.
    mutating func tokenFailed(address: String, now: UInt64) -> UInt64 {
        Self.strike(&addresses, address, now: now)
        return Self.take(&addresses, address, now: now, free: Self.freeStrikesPerAddress)
    }

    private static func strike(_ table: inout [String: Pace], _ key: String, now: UInt64) {
        if table[key] == nil, table.count >= maxEntries {
            table = table.filter { elapsed(since: $0.value.last, now: now) < forgetAfterMilliseconds }
            if table.count >= maxEntries { table.removeAll() }
        }
        var pace = table[key] ?? Pace()
        if elapsed(since: pace.last, now: now) > forgetAfterMilliseconds { pace = Pace() }
        pace.strikes += 1
        pace.last = max(pace.last, now)
        table[key] = pace
    }

    private static func take(_ table: inout [String: Pace], _ key: String, now: UInt64, free: Int) -> UInt64 {
        guard var pace = table[key], elapsed(since: pace.last, now: now) <= forgetAfterMilliseconds else { return now }
        let slot = max(now, pace.nextSlot)
        if pace.strikes >= free {
            let shift = UInt64(min(pace.strikes - free, 16))
            pace.nextSlot = slot + min(baseDelayMilliseconds << shift, maxDelayMilliseconds)
        } else {
            pace.nextSlot = slot
        }
        pace.last = max(pace.last, now)
        table[key] = pace
        return slot
    }

    /// Milliseconds from `last` to `now`; 0 when `now` is the earlier. A caller's `now` can be
    /// older than a time another attempt recorded: a token check takes its `now` when it
    /// arrives and strikes after the store answers, and a failure noted meanwhile is later.
    /// Subtracting crashed the server (an arithmetic overflow) on two bad logins from one
    /// address at once.
    private static func elapsed(since last: UInt64, now: UInt64) -> UInt64 {
        now >= last ? now - last : 0
    }
}
