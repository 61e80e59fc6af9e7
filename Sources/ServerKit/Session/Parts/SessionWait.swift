import SyncCore

/// What a session waits for before it starts its next request (the reply of a barrier
/// commit, a store read, a login check) and the next page of a LIST or SUB replay, read once
/// the client has taken the last one. One step at a time: requests after it wait in the inbox.
final class SessionWait {
    typealias ReadHandler = (Result<StoreAnswer, StoreReads.Failure>) -> Void
    private(set) var isWaiting = false
    private var read: ReadHandler?
    private var login: (tag: String, user: String?)?
    private(set) var nextPage: PendingPage?

    func forCommit() {
        isWaiting = true
    }

    func forRead(_ handler: @escaping ReadHandler) {
        isWaiting = true
        read = handler
    }

    /// An AUTH of `user` (nil for a token) waits for its check.
    func forLogin(tag: String, user: String?) {
        isWaiting = true
        login = (tag, user)
    }

    /// What to do with the read's answer; the wait is over.
    func takeRead() -> ReadHandler? {
        guard let handler = read else { return nil }
        read = nil
        isWaiting = false
        return handler
    }

    /// The AUTH waiting for its check; the wait ends with its reply (`finished`).
    func takeLogin() -> (tag: String, user: String?)? {
        defer { login = nil }
        return login
    }

    func finished() {
        isWaiting = false
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
        read = nil
        login = nil
        nextPage = nil
    }
}

/// A page still to read and send.
enum PendingPage {
    case replay(tag: String, collection: String, since: Int64)
    /// `listed`: records sent so far.
    case listing(tag: String, collection: String, ListingHandle, listed: Int)
}
