import SyncCore

/// The core is what its sessions run in.
extension ServerCore: SessionContext {
    var now: UInt64 { clock.milliseconds }
    var wallClockSeconds: Int64 { clock.wallClockSeconds }
    var commitQueueHasRoom: Bool { committer.hasRoom }

    func carryOut(_ action: SessionAction, for session: Session) {
        switch action {
        case .commit(let operation, let ticket):
            committer.submit(operation) { result in session.commitAnswered(ticket, result) }
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
            clock.atEndOfTurn { [self] in tokenRevoked(hash) }
        case .announce(let event): apply(event)
        case .subscribe(let collection): hub.subscribe(session, to: collection)
        case .unsubscribe(let collection): hub.unsubscribe(session, from: collection)
        case .connection: break
        }
    }
}
