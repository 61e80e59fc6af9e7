import SyncCore
import SyncProtocol

/// GRANT and the account verbs (USER …, PASSWD): checked when their turn comes, committed in
/// request order without waiting for one another (`AdministrationQueue`), passwords hashed
/// off the loop first, each change logged as an `audit` event.
extension Session {
    func submitAdministration(_ tag: String, _ command: Command, bytes: Int) {
        let slot = replies.reserve(bytes: bytes)
        let by = user!
        do throws(ProtocolError) {
            if case .grant(let collection, _, _) = command {
                try requireRole(.admin, collection)
            } else {
                try requireServerAdmin()
            }
        } catch {
            fillSlot(slot, with: .error(tag: tag, error))
            return
        }
        let answer = { [self] (done: @escaping () -> ServerOutput) in
            { (result: Result<StoreOutcome, StoreFailure>) in self.fillSlot(slot, with: Self.administrativeReply(tag, result, onDone: done)) }
        }
        switch command {
        case .grant(let collection, let grantee, let role):
            administration.add(.grant(collection: collection, user: grantee, role: role), answer: answer { [self] in
                ServerLog.event("grant", ["collection": collection, "to": grantee, "role": role?.name ?? "none", "by": by, "address": address])
                emit(.announce(.granted(collection: collection, user: grantee, role: role)))
                return .ok(tag: tag, .granted)
            })
        case .userAdd(let name, let password, let isAdmin):
            let ticket = administration.add(waitingForHash: { .addUser(name: name, passwordHash: $0, isAdmin: isAdmin) }, answer: answer { [self] in
                accountsChanged("user_add", name, by: by, isAdmin ? "admin" : "user")
                return .ok(tag: tag, .account(.added, user: name))
            })
            emit(.hashPassword(password, ticket: ticket))
        case .userPassword(let name, let password):
            let ticket = administration.add(waitingForHash: { .setPassword(user: name, passwordHash: $0, keepingToken: nil) }, answer: answer { [self] in
                accountsChanged("user_passwd", name, by: by)
                return .ok(tag: tag, .account(.passwordSet, user: name))
            })
            emit(.hashPassword(password, ticket: ticket))
        case .userRemove(let name):
            administration.add(.removeUser(name: name), answer: answer { [self] in
                accountsChanged("user_remove", name, by: by)
                return .ok(tag: tag, .account(.removed, user: name))
            })
        case .userAdmin(let name, let isAdmin):
            administration.add(.setServerAdmin(user: name, isAdmin: isAdmin), answer: answer { [self] in
                accountsChanged(isAdmin ? "user_admin_on" : "user_admin_off", name, by: by)
                return .ok(tag: tag, .account(.admin(isAdmin), user: name))
            })
        default:
            fillSlot(slot, with: .error(tag: tag, ProtocolError(.internal, "not an administrative change")))
            return
        }
        commitReadyAdministration()
    }

    /// A new password for the change with this ticket, hashed off the loop.
    func passwordHashed(_ ticket: Int, _ passwordHash: String) {
        administration.hashed(ticket, passwordHash)
        commitReadyAdministration()
    }

    /// Hands the committer the changes at the head of the line that are ready, in order.
    func commitReadyAdministration() {
        for (operation, answer) in administration.takeReady() {
            commit(operation, then: answer)
        }
    }

    /// The answer of an administrative change: `onDone`'s reply once it took effect, else the
    /// error it came to.
    static func administrativeReply(_ tag: String, _ result: Result<StoreOutcome, StoreFailure>, onDone: () -> ServerOutput) -> ServerOutput {
        switch result {
        case .success(.done): onDone()
        case .success(.refused(let error)): .error(tag: tag, error)
        case .failure(let error): .error(tag: tag, commitFailure(error))
        default: .error(tag: tag, ProtocolError(.internal, "the change could not be committed; retry"))
        }
    }

    /// Logs the change to `user`'s account and has every connection it touches judged again
    /// (closed when its user is gone or its password or token no longer valid).
    private func accountsChanged(_ action: String, _ user: String, by: String, _ role: String? = nil) {
        if let role {
            ServerLog.event("audit", ["action": action, "user": user, "role": role, "by": by, "address": address])
        } else {
            ServerLog.event("audit", ["action": action, "user": user, "by": by, "address": address])
        }
        emit(.announce(.accountsChanged))
    }

    /// USER LIST: every account, read from the store.
    func listUsers(_ tag: String) throws(ProtocolError) {
        try requireServerAdmin()
        ask(.users, tag) { [self] answer in
            guard case .users(let users) = answer else { return }
            if !users.isEmpty { send(.notices(users.map { .user(name: $0.name, isAdmin: $0.isAdmin) })) }
            send(.ok(tag: tag, .users(count: users.count)))
        }
    }

    /// PASSWD: the old password is checked as a login is (paced, a failure answered late), then
    /// the new one hashed and stored. The user's other tokens are revoked and their other
    /// connections closed; this one stays, and so does the token it logged in with.
    func changeOwnPassword(_ tag: String, old: String, new: String) {
        wait.forCommit()
        verifyPassword(user!, old) { [self] result in passwordChecked(tag, new, result) }
    }

    /// Checks `password` of `name` as a login is checked; `then` gets the answer.
    func verifyPassword(_ name: String, _ password: String, then: @escaping (Result<StoredUser, LoginGate.Refusal>) -> Void) {
        onPasswordVerified = then
        emit(.verifyPassword(user: name, password: password))
    }

    /// The answer to a `verifyPassword`.
    func passwordVerified(_ result: Result<StoredUser, LoginGate.Refusal>) {
        guard closeReason == nil, let then = onPasswordVerified else { return }
        onPasswordVerified = nil
        then(result)
    }

    private func passwordChecked(_ tag: String, _ new: String, _ result: Result<StoredUser, LoginGate.Refusal>) {
        guard let name = user else { return }
        if case .failure(let refusal) = result {
            ServerLog.event("audit", ["action": "passwd_refused", "user": name, "by": name, "address": address])
            return finishAsync(.error(tag: tag, Self.loginError(refusal)))
        }
        let kept = tokenHash
        let ticket = administration.add(waitingForHash: { [self] hash in
            nextPasswordHash = hash
            return .setPassword(user: name, passwordHash: hash, keepingToken: kept)
        }, answer: { [self] result in
            if case .success(.done) = result, let hash = nextPasswordHash { passwordHash = hash }
            nextPasswordHash = nil
            finishAsync(Self.administrativeReply(tag, result) {
                accountsChanged("passwd", name, by: name)
                return .ok(tag: tag, .passwordChanged)
            })
        })
        emit(.hashPassword(new, ticket: ticket))
    }

    func requireServerAdmin() throws(ProtocolError) {
        guard isAdmin else { throw ProtocolError(.forbidden, "\(user ?? "-") is not a server admin; only a server admin manages accounts") }
    }
}
