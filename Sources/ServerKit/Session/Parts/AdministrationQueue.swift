import SyncCore

/// A connection's administrative changes in flight (GRANT, USER …), in request order. Each is
/// committed only after those before it were handed to the committer, so a GRANT to a user
/// added just before it commits after the add, even while the add's password is still being
/// hashed; none waits for another's commit, so a script of 10,000 changes shares group
/// commits. Record writes that follow wait until these are answered (their checks read what
/// these change).
final class AdministrationQueue {
    typealias Answer = (Result<StoreOutcome, StoreFailure>) -> Void

    private struct Step {
        let ticket: Int
        var operation: StoreOperation?
        /// Makes the operation from the hashed password, for a change still waiting for it.
        let make: ((_ passwordHash: String) -> StoreOperation)?
        let answer: Answer
    }

    private var steps = FIFO<Step>()
    private var lastTicket = 0
    /// Steps handed to the committer and not answered yet.
    private var committing = 0

    /// Nothing is waiting to be committed or answered.
    var isEmpty: Bool { steps.isEmpty && committing == 0 }

    /// A change ready to commit; `answer` gets its commit's outcome.
    func add(_ operation: StoreOperation, answer: @escaping Answer) {
        lastTicket += 1
        steps.append(Step(ticket: lastTicket, operation: operation, make: nil, answer: answer))
    }

    /// A change that needs a password hashed first: `hashed` with the returned ticket makes it
    /// ready.
    func add(waitingForHash make: @escaping (_ passwordHash: String) -> StoreOperation, answer: @escaping Answer) -> Int {
        lastTicket += 1
        steps.append(Step(ticket: lastTicket, operation: nil, make: make, answer: answer))
        return lastTicket
    }

    /// The password of the change with this ticket is hashed.
    func hashed(_ ticket: Int, _ passwordHash: String) {
        // Tickets run in order with no gaps, so the step is found by its distance from the head.
        guard let head = steps.first, ticket >= head.ticket, ticket - head.ticket < steps.count else { return }
        steps.update(atOffset: ticket - head.ticket) { step in step.operation = step.make?(passwordHash) }
    }

    /// The changes at the head whose operations are known, in order, each with the answer to
    /// call once committed.
    func takeReady() -> [(StoreOperation, Answer)] {
        var ready: [(StoreOperation, Answer)] = []
        while let head = steps.first, let operation = head.operation {
            _ = steps.popFirst()
            committing += 1
            ready.append((operation, { [unowned self] result in
                committing -= 1
                head.answer(result)
            }))
        }
        return ready
    }
}
