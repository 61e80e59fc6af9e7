import Foundation
import SyncCore

/// What a session needs from the server it runs in, and all it may touch: the settings it
/// answers with, the directory its access checks and quotas read, the server's half of its
/// actions (commits, reads, login checks, announcements, subscriptions) and what a session
/// reports of itself.
/// `Server` is the one conformer when serving.
protocol SessionContext: AnyObject {
    var configuration: ServerConfiguration { get }
    var serverID: String { get }
    /// HELLO's JSON of limits.
    var limitsJSON: String { get }
    /// Milliseconds on the loop's clock.
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

extension Server: SessionContext {
    var now: UInt64 { loop.nowMilliseconds }
    var wallClockSeconds: Int64 { Int64(Date().timeIntervalSince1970) }
    var commitQueueHasRoom: Bool { committer.hasRoom }

    func carryOut(_ action: SessionAction, for session: Session) {
        switch action {
        case .commit(let operation, let ticket):
            committer.submit(operation) { result in session.committed(ticket, result) }
        case .read(let query):
            reads.answer(query) { result in session.readAnswered(result) }
        // The session is held strongly until its check is answered: a weak reference would give
        // every session a side table, and each retain and release of it the slow path.
        case .checkPassword(let user, let password):
            logins.checkPassword(password, for: user, from: session.address, isStillWanted: { session.closeReason == nil }) { result in
                session.loginAnswered(result.map { LoggedIn(account: $0, tokenHash: nil) })
            }
        case .checkToken(let token):
            logins.checkToken(token, from: session.address, isStillWanted: { session.closeReason == nil }) { result in
                session.loginAnswered(result.map { LoggedIn(account: $0.0, tokenHash: $0.tokenHash) })
            }
        case .verifyPassword(let user, let password):
            logins.checkPassword(password, for: user, from: session.address, isStillWanted: { session.closeReason == nil }) { result in
                session.passwordVerified(result)
            }
        case .hashPassword(let password, let ticket):
            logins.hashNewPassword(password, iterations: configuration.passwordIterations) { hash in session.passwordHashed(ticket, hash) }
        case .checkInvitation(let secret):
            logins.checkInvitation(secret, from: session.address, isStillWanted: { session.closeReason == nil }) { result in
                session.invitationChecked(result)
            }
        case .announce(.tokenRevoked(let hash)):
            // After the reply that revoked it has gone out.
            loop.atEndOfTurn { [self] in tokenRevoked(hash) }
        case .announce(let event): apply(event)
        case .subscribe(let collection): hub.subscribe(session, to: collection)
        case .unsubscribe(let collection): hub.unsubscribe(session, from: collection)
        case .send, .deliver, .pauseReading, .resumeReading, .close, .closeNow: break
        }
    }
}
