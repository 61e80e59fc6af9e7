import SyncCore

/// The commits a session handed to the committer, each by ticket with what to do with its
/// outcome (which may come after the session closed: quota reservations end with it).
final class CommitTickets {
    typealias Handler = (Result<StoreOutcome, StoreFailure>) -> Void
    private var handlers: [Int: Handler] = [:]
    private var lastTicket = 0

    /// The ticket the commit of `handler`'s operation goes under.
    func issue(_ handler: @escaping Handler) -> Int {
        lastTicket += 1
        handlers[lastTicket] = handler
        return lastTicket
    }

    func complete(_ ticket: Int, _ result: Result<StoreOutcome, StoreFailure>) {
        handlers.removeValue(forKey: ticket)?(result)
    }
}
