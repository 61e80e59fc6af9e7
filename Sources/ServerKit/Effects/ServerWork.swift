/// Where the server's blocking work runs (commits, store reads, password hashing), so none of
/// it stalls the server's thread. Each purpose is one lane: jobs in order, one at a time, each
/// answered on the server's thread. Threads when serving (`LoopHost`); in the simulated server
/// jobs run at once and their answers come on virtual time.
public protocol ServerWork: AnyObject {
    func lane(for purpose: WorkPurpose) -> any WorkLane
}

/// What a lane of blocking work is for: each its own, so no kind queues behind another.
public enum WorkPurpose: Sendable {
    /// The group committer's transactions.
    case commits
    /// Sessions' reads, login lookups, account re-reads, the cluster's change log.
    case storeReads
    /// Checking a password against its hash at login.
    case passwordChecks
    /// Hashing new passwords (USER ADD, PASSWD).
    case passwordHashes
}

/// One lane of blocking work.
public protocol WorkLane: AnyObject {
    /// Runs `work` off the server's thread, then `completion` with its result on it (not after
    /// `close()`).
    func submit<Result: Sendable>(_ work: @escaping @Sendable () -> Result, then completion: @escaping (Result) -> Void)
    /// Stops after the job in progress; answers still due are dropped.
    func close()
}
