extension Command {
    /// The request as a client sends it, without tag or LF: the parser's inverse, so clients
    /// assemble no protocol text of their own (`CommandParser.parse` of `"t " + text` gives
    /// back this command).
    public var requestText: String {
        func arg(_ text: String) -> String { ResponseLine.argument(text) }
        switch self {
        case .hello(let version, let client): return "HELLO \(arg(version))" + (client.map { " \(arg($0))" } ?? "")
        case .auth(let user, let password): return "AUTH \(arg(user)) \(arg(password))"
        case .authToken(let token): return "AUTH TOKEN \(arg(token))"
        case .tokenNew(let label, let session): return "TOKEN NEW" + (label.map { " \(arg($0))" } ?? "") + (session ? " SESSION" : "")
        case .tokenRevoke(let token): return "TOKEN REVOKE \(arg(token))"
        case .tokenList: return "TOKEN LIST"
        case .drop(let collection): return "DROP \(collection)"
        case .rename(let from, let to): return "RENAME \(from) \(to)"
        case .create(let collection): return "CREATE \(collection)"
        case .collections: return "COLLECTIONS"
        case .members(let collection): return "MEMBERS \(collection)"
        case .grant(let collection, let user, let role): return "GRANT \(collection) \(arg(user)) \(role?.name ?? "none")"
        case .put(let collection, let id, let baseRev, let fieldsJSON): return "PUT \(collection) \(arg(id)) \(baseRev) \(fieldsJSON)"
        case .move(let collection, let id, let baseRev, let placement): return "MOVE \(collection) \(arg(id)) \(baseRev) \(placement.requestText)"
        case .delete(let collection, let id, let baseRev): return "DEL \(collection) \(arg(id)) \(baseRev)"
        case .get(let collection, let id): return "GET \(collection) \(arg(id))"
        case .versions(let collection, let id): return "VERSIONS \(collection) \(arg(id))"
        case .list(let collection): return "LIST \(collection)"
        case .listAt(let collection, let seq): return "LIST \(collection) AT \(seq)"
        case .listPageAt(let collection, let seq, let after, let limit):
            return "LIST \(collection) AT \(seq)" + (after.map { " AFTER \($0.position) \(arg($0.id))" } ?? "") + " LIMIT \(limit)"
        case .log(let collection, let query):
            return "LOG \(collection)" + (query.since.map { " SINCE \($0)" } ?? "") + (query.author.map { " " + $0.words } ?? "") + " LIMIT \(query.limit)"
        case .revert(let collection, let seq, let author, let dryRun):
            return "REVERT \(collection) TO \(seq)" + (author.map { " " + $0.words } ?? "") + (dryRun ? " DRY-RUN" : "")
        case .listPage(let collection, let after, let limit):
            return "LIST \(collection)" + (after.map { " AFTER \($0.position) \(arg($0.id))" } ?? "") + " LIMIT \(limit)"
        case .subscribe(let collection, let since): return "SUB \(collection) SINCE \(since)"
        case .unsubscribe(let collection): return "UNSUB \(collection)"
        case .ping: return "PING"
        case .stats: return "STATS"
        case .quit: return "QUIT"
        case .whoami: return "WHOAMI"
        case .userAdd(let name, let password, let isAdmin): return "USER ADD \(name) \(arg(password))" + (isAdmin ? " ADMIN" : "")
        case .userPassword(let name, let password): return "USER PASSWD \(name) \(arg(password))"
        case .userRemove(let name): return "USER REMOVE \(name)"
        case .userAdmin(let name, let isAdmin): return "USER ADMIN \(name) \(isAdmin ? "ON" : "OFF")"
        case .userList: return "USER LIST"
        case .passwd(let old, let new): return "PASSWD \(arg(old)) \(arg(new))"
        case .inviteNew(let collection, let role, let expires, let uses, let note):
            return "INVITE NEW \(collection) \(role.name) EXPIRES \(expires) USES \(uses)" + (note.map { " NOTE \(arg($0))" } ?? "")
        case .inviteList(let collection): return "INVITE LIST \(collection)"
        case .inviteRevoke(let collection, let id): return "INVITE REVOKE \(collection) \(id)"
        case .invitePeek(let secret): return "INVITE PEEK \(secret)"
        case .redeem(let secret, let account, let label, let session):
            var text = "REDEEM \(secret)"
            switch account {
            case .new(let user, let password)?: text += " NEW \(user) \(arg(password))"
            case .existing(let user, let password)?: text += " AS \(user) \(arg(password))"
            case nil: break
            }
            return text + (label.map { " \(arg($0))" } ?? "") + (session ? " SESSION" : "")
        }
    }
}

extension Placement {
    /// `FIRST`, `LAST`, `BEFORE <id>` or `AFTER <id>`, as MOVE takes it.
    public var requestText: String {
        switch self {
        case .first: "FIRST"
        case .last: "LAST"
        case .before(let id): "BEFORE \(ResponseLine.argument(id))"
        case .after(let id): "AFTER \(ResponseLine.argument(id))"
        }
    }
}
