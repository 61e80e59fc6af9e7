import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// AUTH: password checks through the login gate, token logins, and what a login sets up.
extension Session {
    func authenticate(_ tag: String, name: String, password: String) {
        awaitingAsync = true
        server.logins.checkPassword(password, for: name, from: address, isStillWanted: { [weak self] in self?.closeReason == nil }) {
            [self] result in
            switch result {
            case .success(let account): loggedIn(tag, account, tokenHash: nil)
            case .failure(let refusal): refuseLogin(tag, refusal, user: name)
            }
        }
    }

    func loggedIn(_ tag: String, _ account: StoredUser, tokenHash: String?) {
        guard closeReason == nil else { return }
        user = account.name
        isAdmin = account.isAdmin
        passwordHash = account.passwordHash
        self.tokenHash = tokenHash
        framer.maxLineBytes = server.configuration.limits.maxLineBytes
        server.sessionLoggedIn(self)
        ServerLog.event("login", ["user": account.name, "address": address, "with": tokenHash.map { "token " + String($0.prefix(TokenInfo.idLength)) } ?? "password"])
        finishAsync(ResponseLine.ok(tag, "AUTH", account.name))
    }

    func refuseLogin(_ tag: String, _ refusal: LoginGate.Refusal, user name: String?) {
        let error = switch refusal {
        case .failed: ProtocolError(.authFailed, "wrong user name, password or token")
        case .busy: ProtocolError(.busy, "too many logins are being checked; retry in a moment")
        case .rateLimited(let seconds): ProtocolError(.rateLimited, "too many failed logins; retry in \(seconds) s")
        }
        server.loginFailed()
        ServerLog.event("login_failed", ["user": name ?? "(token)", "address": address, "code": error.code.rawValue])
        finishAsync(ResponseLine.error(tag, error))
    }
}
