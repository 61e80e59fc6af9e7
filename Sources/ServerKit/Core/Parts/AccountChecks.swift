/// The server's account checks (`Server+Revocation`): the accounts epoch last applied, and
/// whether a check is reading the store, with another asked for meanwhile (and whether that
/// one must read everything).
final class AccountChecks {
    private(set) var appliedEpoch: Int64
    private var running = false
    private var again = false
    private var forceAgain = false

    init(appliedEpoch: Int64) {
        self.appliedEpoch = appliedEpoch
    }

    /// A check is asked for: true when it may start now, false when one runs (it is run again
    /// after that one).
    func begin(force: Bool) -> Bool {
        guard !running else {
            again = true
            forceAgain = forceAgain || force
            return false
        }
        running = true
        again = false
        forceAgain = false
        return true
    }

    /// The running check ended: whether to run another, and whether it must read everything.
    func end() -> (again: Bool, force: Bool) {
        defer { (running, again, forceAgain) = (false, false, false) }
        return (again, forceAgain)
    }

    func applied(_ epoch: Int64) {
        appliedEpoch = epoch
    }
}
