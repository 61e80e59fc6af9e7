import SyncCore
import SyncProtocol

/// Invitations: a collection admin makes, lists and revokes them (INVITE); anyone holding a
/// secret may see what it invites to (INVITE PEEK) and redeem it (REDEEM), each secret check
/// paced as a login. Redeeming gives the role, counts the use, and makes a token tied to the
/// invitation, so revoking it ends every session it produced.
extension Session {
    func invite(_ tag: String, _ collection: String, _ role: Role, expiresIn seconds: Int64, uses: Int, note: String?) throws(ProtocolError) {
        try requireRole(.admin, collection)
        let secret = Crypto.newInvitationSecret()
        let now = context.wallClockSeconds
        let invitation = Invitation(hash: Crypto.sha256Hex(secret), collection: collection, role: role, madeBy: user!, note: note,
                                    createdAt: now, expiresAt: now + seconds, usesAllowed: uses, uses: 0)
        storeOperation(tag, .createInvitation(invitation)) { [self] _ in
            ServerLog.event("audit", ["action": "invite", "collection": collection, "role": role.name, "invitation": invitation.id,
                                      "uses": String(uses), "by": user ?? "-", "address": address])
            return .ok(tag: tag, .invited(secret: secret, id: invitation.id, expiresAt: invitation.expiresAt))
        }
    }

    /// The collection's invitations still open, oldest first.
    func listInvitations(_ tag: String, _ collection: String) throws(ProtocolError) {
        try requireRole(.admin, collection)
        ask(.invitations(of: collection), tag) { [self] answer in
            guard case .invitations(let all) = answer else { return }
            let now = context.wallClockSeconds
            let open = all.filter { $0.closedReason(at: now) == nil }
            if !open.isEmpty { send(.notices(open.map { .invitation($0) })) }
            send(.ok(tag: tag, .invitations(collection: collection, count: open.count)))
        }
    }

    func revokeInvitation(_ tag: String, _ collection: String, id: String) throws(ProtocolError) {
        try requireRole(.admin, collection)
        storeOperation(tag, .revokeInvitation(collection: collection, id: id)) { [self] _ in
            ServerLog.event("audit", ["action": "invitation_revoke", "collection": collection, "invitation": id, "by": user ?? "-", "address": address])
            // The sessions of the tokens it made are closed by the account check this asks for.
            emit(.announce(.accountsChanged))
            return .ok(tag: tag, .invitationRevoked)
        }
    }

    /// INVITE PEEK: what the secret invites to, once it is found (paced).
    func peekInvitation(_ tag: String, secret: String) {
        checkInvitation(tag, secret) { [self] invitation in
            let summary = InvitationSummary(
                collection: invitation.collection, role: invitation.role, madeBy: invitation.madeBy, expiresAt: invitation.expiresAt,
                usesLeft: invitation.usesAllowed - invitation.uses, makesAccounts: context.configuration.invitationsMakeAccounts, note: invitation.note)
            finishAsync(.ok(tag: tag, .invitation(summary)))
        }
    }

    /// REDEEM: for the logged-in user, for a new account (when the server lets invitations make
    /// them), or for an existing one whose password is checked as AUTH checks it. A connection
    /// not logged in is logged in with the new token.
    func redeem(_ tag: String, secret: String, account: RedeemingAccount?, label: String?, endsWithBrowser: Bool) throws(ProtocolError) {
        switch (account, user) {
        case (nil, nil):
            throw ProtocolError(.authRequired, "log in first, or redeem with NEW <user> <password> or AS <user> <password>")
        case (_?, let name?):
            throw ProtocolError(.badRequest, "this connection is logged in as \(name): REDEEM <secret> redeems for \(name)")
        case (.new?, nil) where !context.configuration.invitationsMakeAccounts:
            throw ProtocolError(.forbidden, "this server's invitations do not make accounts (serve --invitations-make-accounts): log in to yours with AS")
        default:
            break
        }
        checkInvitation(tag, secret) { [self] invitation in
            let token = InvitationToken(hash: "", label: label ?? "invitation", endsWithBrowser: endsWithBrowser)
            switch account {
            case .new(let name, let password)?:
                let ticket = administration.add(waitingForHash: { [self] hash in
                    redemption(of: invitation, for: name, newPasswordHash: hash, token: token)
                }, answer: { [self] result in redeemed(tag, invitation, StoredUser(name: name, passwordHash: "", isAdmin: false), result) })
                emit(.hashPassword(password, ticket: ticket))
            case .existing(let name, let password)?:
                verifyPassword(name, password) { [self] result in
                    switch result {
                    case .failure(let refusal): finishAsync(.error(tag: tag, Self.loginError(refusal)))
                    case .success(let found): commitRedemption(tag, invitation, for: found, token: token)
                    }
                }
            case nil:
                commitRedemption(tag, invitation, for: StoredUser(name: user!, passwordHash: passwordHash ?? "", isAdmin: isAdmin), token: token)
            }
        }
    }

    /// Looks the secret up (paced; later requests wait), then `then` with an invitation still
    /// open; a closed one is `EXPIRED`, an unknown secret `AUTH_FAILED`.
    private func checkInvitation(_ tag: String, _ secret: String, then: @escaping (Invitation) -> Void) {
        wait.forCommit()
        onInvitationChecked = { [self] result in
            switch result {
            case .failure(let refusal):
                ServerLog.event("invitation_failed", ["address": address, "code": Self.loginError(refusal).code.rawValue])
                finishAsync(.error(tag: tag, Self.loginError(refusal)))
            case .success(let invitation):
                if let closed = invitation.closedReason(at: context.wallClockSeconds) { return finishAsync(.error(tag: tag, closed)) }
                then(invitation)
            }
        }
        emit(.checkInvitation(secret: secret))
    }

    /// The answer to a `checkInvitation`.
    func invitationChecked(_ result: Result<Invitation, LoginGate.Refusal>) {
        guard closeReason == nil, let then = onInvitationChecked else { return }
        onInvitationChecked = nil
        then(result)
    }

    private func commitRedemption(_ tag: String, _ invitation: Invitation, for account: StoredUser, token: InvitationToken) {
        administration.add(redemption(of: invitation, for: account.name, newPasswordHash: nil, token: token)) { [self] result in
            redeemed(tag, invitation, account, result)
        }
        commitReadyAdministration()
    }

    /// The store operation of a redemption; the token it makes is kept for the reply.
    private func redemption(of invitation: Invitation, for name: String, newPasswordHash: String?, token: InvitationToken) -> StoreOperation {
        var made = token
        let plain = Crypto.newToken()
        made.hash = Crypto.sha256Hex(plain)
        redeemedToken = plain
        return .redeemInvitation(hash: invitation.hash, user: name, newPasswordHash: newPasswordHash, token: made, at: context.wallClockSeconds)
    }

    private func redeemed(_ tag: String, _ invitation: Invitation, _ account: StoredUser, _ result: Result<StoreOutcome, StoreFailure>) {
        let token = redeemedToken ?? ""
        redeemedToken = nil
        finishAsync(Self.administrativeReply(tag, result) { [self] in
            let held = context.directory.role(of: account.name, isAdmin: false, in: invitation.collection)
            let role = max(held ?? invitation.role, invitation.role)
            ServerLog.event("audit", ["action": "redeem", "collection": invitation.collection, "role": role.name, "invitation": invitation.id,
                                      "user": account.name, "address": address])
            emit(.announce(.granted(collection: invitation.collection, user: account.name, role: role)))
            if user == nil { becomeLoggedIn(account, tokenHash: Crypto.sha256Hex(token)) }
            return .ok(tag: tag, .redeemed(user: account.name, collection: invitation.collection, role: role, token: token))
        })
    }
}
