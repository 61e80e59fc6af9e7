import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// AUTH: password checks through the login gate, token logins, and what a login sets up.
extension Session {
    func authenticate(_ tag: String, name: String, password: String) {
        wait.forLogin(tag: tag, user: name)
        emit(.checkPassword(user: name, password: password))
    }

    func authenticate(_ tag: String, token: String) {
        wait.forLogin(tag: tag, user: nil)
        emit(.checkToken(token))
    }

    /// The answer to the login check in progress.
    func loginAnswered(_ result: Result<LoggedIn, LoginGate.Refusal>) {
        guard closeReason == nil, let (tag, name) = wait.takeLogin() else { return }
        switch result {
        case .success(let login):
            loggedIn(tag, login.account, tokenHash: login.tokenHash)
            if let hash = login.tokenHash {
                // For the devices list; nobody waits for it.
                commit(.touchToken(hash: hash, at: context.wallClockSeconds)) { _ in }
            }
        case .failure(let refusal):
            refuseLogin(tag, refusal, user: name)
        }
    }

    func loggedIn(_ tag: String, _ account: StoredUser, tokenHash: String?) {
        guard closeReason == nil else { return }
        becomeLoggedIn(account, tokenHash: tokenHash)
        finishAsync(.ok(tag: tag, .auth(user: account.name)))
    }

    /// The connection is now `account`'s (a password login when `tokenHash` is nil).
    func becomeLoggedIn(_ account: StoredUser, tokenHash: String?) {
        user = account.name
        isAdmin = account.isAdmin
        passwordHash = account.passwordHash
        self.tokenHash = tokenHash
        allowFullLengthLines()
        context.sessionLoggedIn(self)
        ServerLog.event("login", ["user": account.name, "address": address, "with": tokenHash.map { "token " + String($0.prefix(TokenInfo.idLength)) } ?? "password"])
    }

    /// The user's server-admin flag changed under the running context.
    func updateAdmin(_ admin: Bool) {
        isAdmin = admin
    }

    static func loginError(_ refusal: LoginGate.Refusal) -> ProtocolError {
        switch refusal {
        case .failed: ProtocolError(.authFailed, "wrong user name, password or token")
        case .busy: ProtocolError(.busy, "too many logins are being checked; retry in a moment")
        case .rateLimited(let seconds): ProtocolError(.rateLimited, "too many failed logins; retry in \(seconds) s")
        case .unavailable: Self.storeUnavailable
        }
    }

    func refuseLogin(_ tag: String, _ refusal: LoginGate.Refusal, user name: String?) {
        let error = Self.loginError(refusal)
        context.loginFailed()
        ServerLog.event("login_failed", ["user": name ?? "(token)", "address": address, "code": error.code.rawValue])
        finishAsync(.error(tag: tag, error))
    }
}
