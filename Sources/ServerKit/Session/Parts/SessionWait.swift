import SyncCore

/// What a session waits for before it starts its next request (the reply of a barrier
/// commit, a store read, a login check) and the next page of a LIST or SUB replay, read once
/// the client has taken the last one. One step at a time: requests after it wait in the inbox.
final class SessionWait {
    typealias ReadHandler = (Result<StoreAnswer, StoreReads.Failure>) -> Void
    private var step = Step.none
    private(set) var nextPage: PendingPage?

    /// What the session waits for: one thing at a time.
    private enum Step {
        case none
        case commit
        case read(ReadHandler)
        /// An AUTH of `user` (nil for a token) waiting for its check.
        case login(tag: String, user: String?)
        /// Still waiting, but what it waited for was taken (or is no longer wanted): the wait
        /// ends with `finished()`.
        case answered
    }

    var isWaiting: Bool {
        if case .none = step { false } else { true }
    }

    func forCommit() {
        step = .commit
    }

    func forRead(_ handler: @escaping ReadHandler) {
        step = .read(handler)
    }

    /// An AUTH of `user` (nil for a token) waits for its check.
    func forLogin(tag: String, user: String?) {
        step = .login(tag: tag, user: user)
    }

    /// What to do with the read's answer; the wait is over.
    func takeRead() -> ReadHandler? {
        guard case .read(let handler) = step else { return nil }
        step = .none
        return handler
    }

    /// The AUTH waiting for its check; the wait ends with its reply (`finished`).
    func takeLogin() -> (tag: String, user: String?)? {
        guard case .login(let tag, let user) = step else { return nil }
        step = .answered
        return (tag, user)
    }

    func finished() {
        step = .none
    }

    func queue(_ page: PendingPage) {
        nextPage = page
    }

    func takePage() -> PendingPage? {
        defer { nextPage = nil }
        return nextPage
    }

    /// The session closed: no answer or page is wanted any more.
    func cancel() {
        if isWaiting { step = .answered }
        nextPage = nil
    }
}

/// A page still to read and send.
enum PendingPage {
    case replay(tag: String, collection: String, since: Int64)
    /// `listed`: records sent so far.
    case listing(tag: String, collection: String, ListingHandle, listed: Int)
}
