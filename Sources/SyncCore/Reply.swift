import SyncProtocol

/// Every `TAG OK …` reply, written by the server (`line`) and read by clients
/// (`init(words:)`) from this one type, round-trip tested (ReplyTests), so no client reads a
/// reply by the position of its words. A payload (a record's fields, HELLO's limits, STATS)
/// follows the words as JSON and travels beside the reply (`ServerEvent.ok`).
public enum Reply: Equatable, Sendable {
    /// `OK HELLO <version> <server-id> {limits}`.
    case hello(version: String, serverID: String)
    /// `OK AUTH <user>`.
    case auth(user: String)
    /// `OK PUT|MOVE|DEL <collection> <id> <rev> <seq>`.
    case written(WriteVerb, collection: String, id: String, rev: Int64, seq: Int64)
    /// `OK GET <collection> <id> <rev> <position> {fields}`, or `… <rev> - DELETED` (position nil).
    case record(collection: String, id: String, rev: Int64, position: String?)
    /// `OK LIST <collection> <count> <seq>`.
    case listed(collection: String, count: Int, seq: Int64)
    /// `OK SUB <collection> <seq>`: the replay is done; live changes after `through` follow.
    case subscribed(collection: String, through: Int64)
    /// `OK UNSUB <collection>`.
    case unsubscribed(collection: String)
    /// `OK CREATE <collection>`, `OK DROP <collection>`, `OK RENAME <old> <new>`, `OK GRANT`.
    case created(String)
    case dropped(String)
    case renamed(from: String, to: String)
    case granted
    /// `OK COLLECTIONS <count>`.
    case collections(count: Int)
    /// `OK MEMBERS <collection> <count>`.
    case members(collection: String, count: Int)
    /// `OK TOKEN <token>`, `OK TOKEN LIST <count>`, `OK TOKEN REVOKED`.
    case token(String)
    case tokens(count: Int)
    case tokenRevoked
    case pong
    /// `OK STATS {figures}`.
    case stats
    /// `OK BYE` (QUIT).
    case bye
    /// `OK VERSIONS <collection> <id> <count>`.
    case versions(collection: String, id: String, count: Int)
    /// `OK LOG <collection> <count>`.
    case logged(collection: String, count: Int)
    /// `OK REVERT <collection> <written> <kept>`, `… DRY-RUN` when nothing was written.
    case reverted(collection: String, written: Int, kept: Int, dryRun: Bool)
    /// `OK WHOAMI <user> admin|user`.
    case whoami(user: String, isAdmin: Bool)
    /// `OK USER ADD|PASSWD|REMOVE <name>`, `OK USER ADMIN <name> ON|OFF`.
    case account(AccountChange, user: String)
    /// `OK USER LIST <count>`.
    case users(count: Int)
    /// `OK PASSWD`: the caller's own password changed.
    case passwordChanged
    /// `OK INVITE <secret> <id> <expires>`: the secret is shown this once.
    case invited(secret: String, id: String, expiresAt: Int64)
    /// `OK INVITE LIST <collection> <count>`, `OK INVITE REVOKED`.
    case invitations(collection: String, count: Int)
    case invitationRevoked
    /// `OK INVITE PEEK <collection> <role> <made-by> <expires> <uses-left> accounts|no-accounts <note|->`.
    case invitation(InvitationSummary)
    /// `OK REDEEM <user> <collection> <role> <token>`.
    case redeemed(user: String, collection: String, role: Role, token: String)
    /// An OK this client does not know how to read (a newer server's), its words kept.
    case other([String])

    /// What a USER verb changed.
    public enum AccountChange: Equatable, Sendable {
        case added, passwordSet, removed
        case admin(Bool)
    }

    /// The verb of a record write.
    public enum WriteVerb: String, Sendable {
        case put = "PUT", move = "MOVE", delete = "DEL"
    }

    /// The words after `OK`, arguments quoted where they need it.
    public var words: [String] {
        switch self {
        case .hello(let version, let serverID): ["HELLO", version, serverID]
        case .auth(let user): ["AUTH", ResponseLine.argument(user)]
        case .written(let verb, let collection, let id, let rev, let seq):
            [verb.rawValue, collection, ResponseLine.argument(id), String(rev), String(seq)]
        case .record(let collection, let id, let rev, let position):
            ["GET", collection, ResponseLine.argument(id), String(rev)] + (position.map { [$0] } ?? ["-", "DELETED"])
        case .listed(let collection, let count, let seq): ["LIST", collection, String(count), String(seq)]
        case .subscribed(let collection, let through): ["SUB", collection, String(through)]
        case .unsubscribed(let collection): ["UNSUB", collection]
        case .created(let name): ["CREATE", name]
        case .dropped(let name): ["DROP", name]
        case .renamed(let from, let to): ["RENAME", from, to]
        case .granted: ["GRANT"]
        case .collections(let count): ["COLLECTIONS", String(count)]
        case .members(let collection, let count): ["MEMBERS", collection, String(count)]
        case .token(let token): ["TOKEN", token]
        case .tokens(let count): ["TOKEN", "LIST", String(count)]
        case .tokenRevoked: ["TOKEN", "REVOKED"]
        case .pong: ["PONG"]
        case .stats: ["STATS"]
        case .bye: ["BYE"]
        case .versions(let collection, let id, let count): ["VERSIONS", collection, ResponseLine.argument(id), String(count)]
        case .logged(let collection, let count): ["LOG", collection, String(count)]
        case .reverted(let collection, let written, let kept, let dryRun):
            ["REVERT", collection, String(written), String(kept)] + (dryRun ? ["DRY-RUN"] : [])
        case .whoami(let user, let isAdmin): ["WHOAMI", ResponseLine.argument(user), isAdmin ? "admin" : "user"]
        case .account(let change, let user):
            switch change {
            case .added: ["USER", "ADD", user]
            case .passwordSet: ["USER", "PASSWD", user]
            case .removed: ["USER", "REMOVE", user]
            case .admin(let on): ["USER", "ADMIN", user, on ? "ON" : "OFF"]
            }
        case .users(let count): ["USER", "LIST", String(count)]
        case .passwordChanged: ["PASSWD"]
        case .invited(let secret, let id, let expiresAt): ["INVITE", secret, id, ServerNotice.time(expiresAt)]
        case .invitations(let collection, let count): ["INVITE", "LIST", collection, String(count)]
        case .invitationRevoked: ["INVITE", "REVOKED"]
        case .invitation(let summary):
            ["INVITE", "PEEK", summary.collection, summary.role.name, summary.madeBy, ServerNotice.time(summary.expiresAt), String(summary.usesLeft),
             summary.makesAccounts ? "accounts" : "no-accounts", ResponseLine.argument(summary.note ?? "-")]
        case .redeemed(let user, let collection, let role, let token): ["REDEEM", user, collection, role.name, token]
        case .other(let words): words
        }
    }

    /// `tag OK <words> [payload]` with its LF; `payload` is JSON text (canonical already).
    public func line(_ tag: String, payload: String? = nil) -> String {
        if case .written(let verb, let collection, let id, let rev, let seq) = self, payload == nil {
            // The reply of every write, made in one allocation (no array of words).
            let quotedID = ResponseLine.argument(id)
            var line = ""
            line.reserveCapacity(tag.utf8.count + collection.utf8.count + quotedID.utf8.count + 48)
            line += tag
            line += " OK "
            line += verb.rawValue
            line += " "
            line += collection
            line += " "
            line += quotedID
            line += " "
            line += String(rev)
            line += " "
            line += String(seq)
            line += "\n"
            return line
        }
        return ResponseLine.ok(tag, words: payload.map { words + [$0] } ?? words)
    }

    /// Reads the words after `OK` (JSON strings already decoded, the payload taken off).
    public init(words: [String]) {
        self = Self.read(words) ?? .other(words)
    }

    private static func read(_ words: [String]) -> Reply? {
        func number(_ index: Int) -> Int64? { index < words.count ? Int64(words[index]) : nil }
        switch (words.first, words.count) {
        case ("HELLO", 3): return .hello(version: words[1], serverID: words[2])
        case ("AUTH", 2): return .auth(user: words[1])
        case ("PUT", 5), ("MOVE", 5), ("DEL", 5):
            guard let verb = WriteVerb(rawValue: words[0]), let rev = number(3), let seq = number(4) else { return nil }
            return .written(verb, collection: words[1], id: words[2], rev: rev, seq: seq)
        case ("GET", 5):
            guard let rev = number(3) else { return nil }
            return .record(collection: words[1], id: words[2], rev: rev, position: words[4])
        case ("GET", 6) where words[4] == "-" && words[5] == "DELETED":
            guard let rev = number(3) else { return nil }
            return .record(collection: words[1], id: words[2], rev: rev, position: nil)
        case ("LIST", 4):
            guard let count = number(2), let seq = number(3) else { return nil }
            return .listed(collection: words[1], count: Int(count), seq: seq)
        case ("SUB", 3):
            guard let through = number(2) else { return nil }
            return .subscribed(collection: words[1], through: through)
        case ("UNSUB", 2): return .unsubscribed(collection: words[1])
        case ("CREATE", 2): return .created(words[1])
        case ("DROP", 2): return .dropped(words[1])
        case ("RENAME", 3): return .renamed(from: words[1], to: words[2])
        case ("GRANT", 1): return .granted
        case ("COLLECTIONS", 2): return number(1).map { .collections(count: Int($0)) }
        case ("MEMBERS", 3): return number(2).map { .members(collection: words[1], count: Int($0)) }
        case ("TOKEN", 2) where words[1] == "REVOKED": return .tokenRevoked
        case ("TOKEN", 2): return .token(words[1])
        case ("TOKEN", 3) where words[1] == "LIST": return number(2).map { .tokens(count: Int($0)) }
        case ("PONG", 1): return .pong
        case ("STATS", 1): return .stats
        case ("BYE", 1): return .bye
        case ("LOG", 3): return number(2).map { .logged(collection: words[1], count: Int($0)) }
        case ("REVERT", 4), ("REVERT", 5):
            guard let written = number(2), let kept = number(3), words.count == 4 || words[4] == "DRY-RUN" else { return nil }
            return .reverted(collection: words[1], written: Int(written), kept: Int(kept), dryRun: words.count == 5)
        case ("VERSIONS", 4): return number(3).map { .versions(collection: words[1], id: words[2], count: Int($0)) }
        case ("USER", 3) where words[1] == "LIST": return number(2).map { .users(count: Int($0)) }
        case ("USER", 3) where words[1] == "ADD": return .account(.added, user: words[2])
        case ("USER", 3) where words[1] == "PASSWD": return .account(.passwordSet, user: words[2])
        case ("USER", 3) where words[1] == "REMOVE": return .account(.removed, user: words[2])
        case ("USER", 4) where words[1] == "ADMIN" && (words[3] == "ON" || words[3] == "OFF"):
            return .account(.admin(words[3] == "ON"), user: words[2])
        case ("PASSWD", 1): return .passwordChanged
        case ("INVITE", 2) where words[1] == "REVOKED": return .invitationRevoked
        case ("INVITE", 4) where words[1] == "LIST": return number(3).map { .invitations(collection: words[2], count: Int($0)) }
        case ("INVITE", 4):
            guard let expires = ServerNotice.seconds(words[3]) else { return nil }
            return .invited(secret: words[1], id: words[2], expiresAt: expires)
        case ("INVITE", 9) where words[1] == "PEEK":
            guard let role = Role(name: words[3]), let expires = ServerNotice.seconds(words[5]), let left = number(6) else { return nil }
            return .invitation(InvitationSummary(collection: words[2], role: role, madeBy: words[4], expiresAt: expires, usesLeft: Int(left),
                                                 makesAccounts: words[7] == "accounts", note: words[8] == "-" ? nil : words[8]))
        case ("REDEEM", 5):
            guard let role = Role(name: words[3]) else { return nil }
            return .redeemed(user: words[1], collection: words[2], role: role, token: words[4])
        case ("WHOAMI", 3) where words[2] == "admin" || words[2] == "user": return .whoami(user: words[1], isAdmin: words[2] == "admin")
        default: return nil
        }
    }
}

/// What an invitation invites to, as the page that redeems it shows it.
public struct InvitationSummary: Equatable, Sendable {
    public var collection: String
    public var role: Role
    public var madeBy: String
    public var expiresAt: Int64
    public var usesLeft: Int
    /// Whether redeeming it may make a new account (`serve --invitations-make-accounts`).
    public var makesAccounts: Bool
    public var note: String?

    public init(collection: String, role: Role, madeBy: String, expiresAt: Int64, usesLeft: Int, makesAccounts: Bool, note: String?) {
        (self.collection, self.role, self.madeBy, self.expiresAt) = (collection, role, madeBy, expiresAt)
        (self.usesLeft, self.makesAccounts, self.note) = (usesLeft, makesAccounts, note)
    }
}
