import SyncCore

/// What a session needs from the server it runs in, and all it may touch: the settings it
/// answers with, the directory its access checks and quotas read, the server's half of its
/// actions (commits, reads, login checks, announcements, subscriptions) and what a session
/// reports of itself.
/// `ServerCore` is the one conformer.
protocol SessionContext: AnyObject {
    var configuration: ServerConfiguration { get }
    var serverID: String { get }
    /// HELLO's JSON of limits.
    var limitsJSON: String { get }
    /// Milliseconds on the server's clock.
    var now: UInt64 { get }
    /// Seconds since 1970 on the wall clock (what invitations and tokens are stamped with).
    var wallClockSeconds: Int64 { get }
    var directory: Directory { get }
    /// While the disk is full only DEL is taken.
    var diskFull: Bool { get }
    /// Whether the group committer takes more writes now (else `waitForCommitRoom`).
    var commitQueueHasRoom: Bool { get }
    func statsJSON() -> String

    /// Carries out the server's part of an action (commit, read, login check, announcement,
    /// subscription); an answer comes back through the session's input of the same name.
    func carryOut(_ action: SessionAction, for session: Session)
    /// Bytes a session handed to its connection (the memory budget counts them).
    func noteQueued(_ bytes: Int)
    /// `commitRoomAvailable()` is called on `session` once the committer has room again.
    func waitForCommitRoom(_ session: Session)

    func sessionLoggedIn(_ session: Session)
    func loginFailed()
    /// Called once as a session closes, whatever the reason; `sessionGone` once its connection is.
    func sessionClosing(_ session: Session)
    func sessionGone(_ session: Session)
}

/// Who a login let in: the account, and the token's hash for a token login.
struct LoggedIn {
    let account: StoredUser
    let tokenHash: String?
}
