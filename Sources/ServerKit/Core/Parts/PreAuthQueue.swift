/// Connections not logged in yet, oldest first, and how many there are: at
/// `--max-unauthenticated` the oldest one not waiting for a login answer makes room for a new
/// one. Entries of sessions since gone or logged in are skipped when met.
final class PreAuthQueue {
    private var order = FIFO<ObjectIdentifier>()
    private(set) var count = 0

    /// A session opened; `isSettled` tells whether a session at the front has logged in or gone
    /// (those entries leave as they come up: a session cannot stay at the front long, the
    /// pre-auth deadline closes it).
    func opened(_ key: ObjectIdentifier, isSettled: (ObjectIdentifier) -> Bool) {
        order.append(key)
        count += 1
        while let oldest = order.first, isSettled(oldest) { _ = order.popFirst() }
    }

    func loggedIn() {
        count -= 1
    }

    /// A session closes: it leaves the count if it never logged in.
    func closing(loggedIn: Bool) {
        if !loggedIn { count -= 1 }
    }

    /// The longest-waiting session not logged in, not closing and not waiting for a login answer
    /// (those go to the back; one full pass at most); nil when there is none.
    func oldestToEvict(_ session: (ObjectIdentifier) -> Session?) -> Session? {
        var looked = 0
        while looked <= order.count, let key = order.popFirst() {
            looked += 1
            guard let candidate = session(key), candidate.user == nil, candidate.closeReason == nil else { continue }
            if candidate.isLoggingIn {
                order.append(key)
                continue
            }
            return candidate
        }
        return nil
    }
}
