import SyncCore

/// What a session decides to do, in the order it decides it, as data: its connection's part
/// (send, pause or resume reading, close) goes to its `SessionTransport`, the server's part
/// (commit, read, check a login, subscribe) to its `SessionContext`, whose answers come back as
/// the session's inputs (`commitAnswered`, `readAnswered`, `loginAnswered`). `Session.emit`
/// routes each action, and a test can watch them by wrapping it.
enum SessionAction {
    /// The connection's part: send, deliver, pause or resume reading, close.
    case connection(ConnectionAction)
    /// Hand `operation` to the group committer; its outcome comes back as
    /// `Session.commitAnswered(ticket, _)`.
    case commit(StoreOperation, ticket: Int)
    /// Ask the store, off the loop; the answer comes back through `Session.readAnswered`.
    case read(StoreQuery)
    /// Check a password or a login token (paced, hashed off the loop); the answer comes back
    /// through `Session.loginAnswered`.
    case checkPassword(user: String, password: String)
    case checkToken(String)
    /// PASSWD's check of the caller's old password, paced as a login; the answer comes back
    /// through `Session.passwordVerified`.
    case verifyPassword(user: String, password: String)
    /// Hash a new password (USER ADD, USER PASSWD, PASSWD) off the loop at the server's work
    /// factor; the hash comes back through `Session.passwordHashed(ticket, _)`.
    case hashPassword(String, ticket: Int)
    /// Look up the invitation a secret names, paced as a login; the answer comes back through
    /// `Session.invitationChecked`.
    case checkInvitation(secret: String)
    /// A committed change to collections or tokens that every other connection must hear of
    /// (created, dropped, renamed, granted, token revoked), as the cluster's nodes tell it.
    case announce(ClusterEvent.Kind)
    /// Start or stop receiving a collection's committed changes (`Session.deliver`).
    case subscribe(String)
    case unsubscribe(String)
}
