/// A request the server understands, with its arguments checked and typed.
public enum Command: Equatable, Sendable {
    case hello(version: String, clientName: String?)
    case auth(user: String, password: String)
    case authToken(String)
    /// `endsWithBrowser`: for a console login without "keep me signed in".
    case tokenNew(label: String?, endsWithBrowser: Bool = false)
    case tokenRevoke(String)
    case tokenList
    case drop(collection: String)
    case rename(from: String, to: String)
    case create(collection: String)
    case collections
    case grant(collection: String, user: String, role: Role?)
    /// The collection's members and their roles.
    case members(collection: String)
    /// `fieldsJSON`: the fields in canonical JSON, as stored and broadcast.
    case put(collection: String, id: String, baseRev: Int64, fieldsJSON: String)
    case move(collection: String, id: String, baseRev: Int64, placement: Placement)
    case delete(collection: String, id: String, baseRev: Int64)
    case get(collection: String, id: String)
    /// The record's kept earlier versions, newest first.
    case versions(collection: String, id: String)
    case list(collection: String)
    /// A page of the listing: at most `limit` live records after `after` (from the first when nil).
    case listPage(collection: String, after: RecordCursor?, limit: Int)
    /// The live records as they stood once `seq` was committed.
    case listAt(collection: String, seq: Int64)
    /// A page of the list as it stood at `seq`, as `listPage` pages today's.
    case listPageAt(collection: String, seq: Int64, after: RecordCursor?, limit: Int)
    /// The collection's change log: who changed what, when.
    case log(collection: String, query: LogQuery)
    /// Writes every record changed after `seq` (by `author` only, when given) back to how it
    /// stood, as new revisions; `dryRun` only says what it would write.
    case revert(collection: String, toSeq: Int64, author: LogQuery.Author?, dryRun: Bool)
    case subscribe(collection: String, since: Int64)
    case unsubscribe(collection: String)
    case ping
    case stats
    case quit
    /// Who the connection is logged in as.
    case whoami
    /// Server admins' account verbs: the same rules as `plistsync user` on the data folder.
    case userAdd(name: String, password: String, isAdmin: Bool)
    /// Sets a user's password (their tokens are revoked, their connections closed).
    case userPassword(name: String, password: String)
    case userRemove(name: String)
    case userAdmin(name: String, isAdmin: Bool)
    case userList
    /// The caller changes their own password, proving the old one.
    case passwd(old: String, new: String)
    /// A collection admin invites someone: `role` for `expiresInSeconds`, `uses` times.
    case inviteNew(collection: String, role: Role, expiresInSeconds: Int64, uses: Int, note: String?)
    case inviteList(collection: String)
    case inviteRevoke(collection: String, id: String)
    /// What an invitation's secret invites to, for the page that redeems it.
    case invitePeek(secret: String)
    /// Redeems an invitation: for the logged-in user (`account` nil), a new account, or an
    /// existing one logged in to with its password.
    case redeem(secret: String, account: RedeemingAccount?, label: String?, endsWithBrowser: Bool = false)

    /// Whether the verb may be used before AUTH succeeds.
    public var allowedBeforeAuth: Bool {
        switch self {
        case .hello, .auth, .authToken, .ping, .quit, .invitePeek, .redeem: true
        default: false
        }
    }

    /// Record writes: pipelined into group commits without waiting for one another.
    public var isDelete: Bool {
        if case .delete = self { return true }
        return false
    }

    public var isRecordWrite: Bool {
        switch self {
        case .put, .move, .delete: true
        default: false
        }
    }

    /// Administrative changes that pipeline like record writes (each keeps its reply's place,
    /// none waits for the one before to commit): GRANT and the USER changes.
    public var isPipelinedAdministration: Bool {
        switch self {
        case .grant, .userAdd, .userPassword, .userRemove, .userAdmin: true
        default: false
        }
    }
}

/// One verb's entry in the request table: its name, argument counts, payload rule, and the
/// parser that makes its `Command`. A verb is added in one place; none can fall through to
/// another's meaning.
struct VerbSpec: Sendable {
    typealias Parse = @Sendable (_ args: [String], _ payload: String?, _ usage: String) throws(ProtocolError) -> Command

    let verb: String
    let arguments: ClosedRange<Int>
    let takesPayload: Bool
    let usage: String
    let parse: Parse
}

/// Turns a `RequestLine` into a `Command`, from one table, with uniform arity errors (redis'
/// `commandTable`).
public enum CommandParser {
    static let table: [String: VerbSpec] = Dictionary(uniqueKeysWithValues: [
        VerbSpec(verb: "HELLO", arguments: 1...2, takesPayload: false, usage: "HELLO <version> [client-name]") { args, _, _ in
            .hello(version: args[0], clientName: args.count > 1 ? args[1] : nil)
        },
        VerbSpec(verb: "AUTH", arguments: 2...2, takesPayload: false, usage: "AUTH <user> <password> | AUTH TOKEN <token>") { args, _, _ in
            args[0].uppercased() == "TOKEN" ? .authToken(args[1]) : .auth(user: args[0], password: args[1])
        },
        VerbSpec(verb: "TOKEN", arguments: 1...3, takesPayload: false, usage: "TOKEN NEW [label] [SESSION] | TOKEN LIST | TOKEN REVOKE <token>|<token-id>") {
            args, _, usage throws(ProtocolError) in
            switch args[0].uppercased() {
            case "NEW":
                let (words, session) = sessionFlag(Array(args.dropFirst()))
                guard words.count <= 1 else { throw ProtocolError(.badRequest, "usage: \(usage)") }
                return .tokenNew(label: words.first, endsWithBrowser: session)
            case "REVOKE" where args.count == 2: return .tokenRevoke(args[1])
            case "LIST" where args.count == 1: return .tokenList
            default: throw ProtocolError(.badRequest, "usage: \(usage)")
            }
        },
        VerbSpec(verb: "CREATE", arguments: 1...1, takesPayload: false, usage: "CREATE <collection>") { args, _, _ throws(ProtocolError) in
            .create(collection: try collection(args[0]))
        },
        VerbSpec(verb: "DROP", arguments: 1...1, takesPayload: false, usage: "DROP <collection>") { args, _, _ throws(ProtocolError) in
            .drop(collection: try collection(args[0]))
        },
        VerbSpec(verb: "RENAME", arguments: 2...2, takesPayload: false, usage: "RENAME <collection> <new-name>") { args, _, _ throws(ProtocolError) in
            .rename(from: try collection(args[0]), to: try collection(args[1]))
        },
        VerbSpec(verb: "COLLECTIONS", arguments: 0...0, takesPayload: false, usage: "COLLECTIONS") { _, _, _ in .collections },
        VerbSpec(verb: "MEMBERS", arguments: 1...1, takesPayload: false, usage: "MEMBERS <collection>") { args, _, _ throws(ProtocolError) in
            .members(collection: try collection(args[0]))
        },
        VerbSpec(verb: "GRANT", arguments: 3...3, takesPayload: false, usage: "GRANT <collection> <user> read|write|admin|none") {
            args, _, _ throws(ProtocolError) in
            let role: Role?
            if args[2].lowercased() == "none" {
                role = nil
            } else if let named = Role(name: args[2]) {
                role = named
            } else {
                throw ProtocolError(.badRequest, "role must be read, write, admin or none")
            }
            guard Names.isValidUser(args[1]) else { throw ProtocolError(.badRequest, "invalid user name") }
            return .grant(collection: try collection(args[0]), user: args[1], role: role)
        },
        VerbSpec(verb: "PUT", arguments: 3...3, takesPayload: true, usage: "PUT <collection> <id> <base-rev> {fields}") { args, payload, _ throws(ProtocolError) in
            .put(collection: try collection(args[0], orConflicts: true), id: try recordID(args[1], in: args[0]), baseRev: try revision(args[2]), fieldsJSON: payload ?? "{}")
        },
        VerbSpec(verb: "MOVE", arguments: 4...5, takesPayload: false, usage: "MOVE <collection> <id> <base-rev> FIRST|LAST|BEFORE <id>|AFTER <id>") {
            args, _, usage throws(ProtocolError) in
            .move(collection: try collection(args[0]), id: try recordID(args[1]), baseRev: try revision(args[2]), placement: try placement(Array(args[3...]), usage: usage))
        },
        VerbSpec(verb: "DEL", arguments: 3...3, takesPayload: false, usage: "DEL <collection> <id> <base-rev>") { args, _, _ throws(ProtocolError) in
            .delete(collection: try collection(args[0], orConflicts: true), id: try recordID(args[1], in: args[0]), baseRev: try revision(args[2]))
        },
        VerbSpec(verb: "GET", arguments: 2...2, takesPayload: false, usage: "GET <collection> <id>") { args, _, _ throws(ProtocolError) in
            .get(collection: try collection(args[0], orConflicts: true), id: try recordID(args[1], in: args[0]))
        },
        VerbSpec(verb: "VERSIONS", arguments: 2...2, takesPayload: false, usage: "VERSIONS <collection> <id>") { args, _, _ throws(ProtocolError) in
            .versions(collection: try collection(args[0]), id: try recordID(args[1]))
        },
        VerbSpec(verb: "LIST", arguments: 1...8, takesPayload: false,
                 usage: "LIST <collection> [AT <seq>] [[AFTER <position> <id>] LIMIT <n>]") { args, _, usage throws(ProtocolError) in
            try list(args, usage: usage)
        },
        VerbSpec(verb: "LOG", arguments: 1...7, takesPayload: false, usage: "LOG <collection> [SINCE <seq>] [BY <user>|DEVICE <id>] [LIMIT <n>]") {
            args, _, usage throws(ProtocolError) in
            let options = try logOptions(Array(args.dropFirst()), allowed: ["SINCE", "BY", "DEVICE", "LIMIT"], usage: usage)
            let limit = try options["LIMIT"].map { text throws(ProtocolError) in try logLimit(text) } ?? LogQuery.defaultLimit
            let since = try options["SINCE"].map { text throws(ProtocolError) in try seq(text) }
            return .log(collection: try collection(args[0]), query: LogQuery(since: since, author: try logAuthor(options), limit: limit))
        },
        VerbSpec(verb: "REVERT", arguments: 3...6, takesPayload: false, usage: "REVERT <collection> TO <seq> [BY <user>|DEVICE <id>] [DRY-RUN]") {
            args, _, usage throws(ProtocolError) in
            let dryRun = args.last?.uppercased() == "DRY-RUN"
            let words = Array(args.dropFirst().dropLast(dryRun ? 1 : 0))
            let options = try logOptions(words, allowed: ["TO", "BY", "DEVICE"], usage: usage)
            guard let to = options["TO"] else { throw ProtocolError(.badRequest, "usage: \(usage)") }
            return .revert(collection: try collection(args[0]), toSeq: try seq(to), author: try logAuthor(options), dryRun: dryRun)
        },
        VerbSpec(verb: "SUB", arguments: 3...3, takesPayload: false, usage: "SUB <collection> SINCE <seq>") { args, _, usage throws(ProtocolError) in
            guard args[1].uppercased() == "SINCE" else { throw ProtocolError(.badRequest, "usage: \(usage)") }
            guard let since = Int64(args[2]), since >= 0 else { throw ProtocolError(.badRequest, "seq must be a non-negative integer") }
            return .subscribe(collection: try collection(args[0], orConflicts: true), since: since)
        },
        VerbSpec(verb: "UNSUB", arguments: 1...1, takesPayload: false, usage: "UNSUB <collection>") { args, _, _ throws(ProtocolError) in
            .unsubscribe(collection: try collection(args[0], orConflicts: true))
        },
        VerbSpec(verb: "PING", arguments: 0...0, takesPayload: false, usage: "PING") { _, _, _ in .ping },
        VerbSpec(verb: "STATS", arguments: 0...0, takesPayload: false, usage: "STATS") { _, _, _ in .stats },
        VerbSpec(verb: "QUIT", arguments: 0...0, takesPayload: false, usage: "QUIT") { _, _, _ in .quit },
        VerbSpec(verb: "WHOAMI", arguments: 0...0, takesPayload: false, usage: "WHOAMI") { _, _, _ in .whoami },
    ].map { ($0.verb, $0) } + accountVerbs.map { ($0.verb, $0) })

    /// The verbs, for `UNKNOWN_COMMAND` replies and documentation checks.
    public static var verbs: [String] { table.keys.sorted() }

    /// Checks arity, names and numbers; errors carry the wire code to answer with.
    public static func parse(_ line: RequestLine) throws(ProtocolError) -> Command {
        guard let spec = table[line.verb] else {
            throw ProtocolError(.unknownCommand, "unknown verb \(ValueJSON.quoted(line.verb))")
        }
        let args = line.arguments
        guard spec.arguments.contains(args.count) else {
            throw ProtocolError(.badRequest, "wrong number of arguments; usage: \(spec.usage)")
        }
        if spec.takesPayload {
            guard line.payloadJSON != nil else { throw ProtocolError(.badRequest, "missing JSON payload; usage: \(spec.usage)") }
        } else if line.payloadJSON != nil {
            throw ProtocolError(.badRequest, "\(spec.verb) takes no JSON payload")
        }
        return try spec.parse(args, line.payloadJSON, spec.usage)
    }

    /// Checks the names and numbers of a command made as a value (the HTTP API's) as `parse`
    /// checks those of a line, with the same errors: no request reaches a session unchecked.
    public static func validate(_ command: Command) throws(ProtocolError) {
        switch command {
        case .hello, .auth, .authToken, .tokenNew, .tokenRevoke, .tokenList, .collections, .ping, .stats, .quit, .whoami, .userList:
            break
        case .userAdd(let name, let secret, _):
            _ = try newUser(name)
            _ = try password(secret)
        case .userPassword(let name, let secret):
            _ = try user(name)
            _ = try password(secret)
        case .userRemove(let name), .userAdmin(let name, _):
            _ = try user(name)
        case .passwd(_, let new):
            _ = try password(new)
        case .inviteNew(let name, _, let expires, let uses, let note):
            _ = try collection(name)
            guard (60...maxInvitationSeconds).contains(expires) else {
                throw ProtocolError(.badRequest, "an invitation lasts from 60 s to \(maxInvitationSeconds) s (a year)")
            }
            guard (1...maxInvitationUses).contains(uses) else { throw ProtocolError(.badRequest, "uses is a whole number from 1 to \(maxInvitationUses)") }
            if let note { _ = try invitationNote(note) }
        case .inviteList(let name):
            _ = try collection(name)
        case .inviteRevoke(let name, let id):
            _ = try collection(name)
            guard Names.isLowercaseHex(id, length: 12) else { throw ProtocolError(.badRequest, "an invitation id is 12 hex digits (INVITE LIST shows them)") }
        case .invitePeek(let secret):
            _ = try invitationSecret(secret)
        case .redeem(let secret, let account, _, _):
            _ = try invitationSecret(secret)
            switch account {
            case .new(let name, let secret)?:
                _ = try newUser(name)
                _ = try password(secret)
            case .existing(let name, _)?:
                _ = try user(name)
            case nil:
                break
            }
        case .drop(let name), .create(let name), .members(let name):
            _ = try collection(name)
        case .rename(let from, let to):
            _ = try collection(from)
            _ = try collection(to)
        case .grant(let name, let user, _):
            _ = try collection(name)
            guard Names.isValidUser(user) else { throw ProtocolError(.badRequest, "invalid user name") }
        case .put(let name, let id, let baseRev, _), .delete(let name, let id, let baseRev):
            _ = try recordID(id, in: try collection(name, orConflicts: true))
            guard baseRev >= 0 else { throw ProtocolError(.badRequest, "base-rev must be a non-negative integer") }
        case .move(let name, let id, let baseRev, let placement):
            _ = try collection(name)
            _ = try recordID(id)
            guard baseRev >= 0 else { throw ProtocolError(.badRequest, "base-rev must be a non-negative integer") }
            if case .before(let anchor) = placement { _ = try recordID(anchor) }
            if case .after(let anchor) = placement { _ = try recordID(anchor) }
        case .get(let name, let id):
            _ = try recordID(id, in: try collection(name, orConflicts: true))
        case .versions(let name, let id):
            _ = try collection(name)
            _ = try recordID(id)
        case .list(let name), .unsubscribe(let name):
            _ = try collection(name, orConflicts: true)
        case .listPage(let name, let after, let limit):
            _ = try collection(name, orConflicts: true)
            if let after { _ = try cursor(after.position, after.id) }
            _ = try pageLimit(String(limit))
        case .listPageAt(let name, let seq, let after, let limit):
            try validate(.listAt(collection: name, seq: seq))
            try validate(.listPage(collection: name, after: after, limit: limit))
        case .subscribe(let name, let since), .listAt(let name, let since):
            _ = try collection(name, orConflicts: true)
            guard since >= 0 else { throw ProtocolError(.badRequest, "seq must be a non-negative integer") }
        case .log(let name, let query):
            _ = try collection(name)
            _ = try logLimit(String(query.limit))
            if let since = query.since { _ = try seq(String(since)) }
            try validate(query.author)
        case .revert(let name, let to, let author, _):
            _ = try collection(name)
            _ = try seq(String(to))
            try validate(author)
        }
    }

    private static func validate(_ author: LogQuery.Author?) throws(ProtocolError) {
        switch author {
        case .user(let name)?: _ = try user(name)
        case .device(let id)?: _ = try device(id)
        case nil: break
        }
    }

    /// `KEYWORD value` pairs in any order, each at most once, from `allowed`.
    private static func logOptions(_ words: [String], allowed: Set<String>, usage: String) throws(ProtocolError) -> [String: String] {
        guard words.count % 2 == 0 else { throw ProtocolError(.badRequest, "usage: \(usage)") }
        var options: [String: String] = [:]
        for index in stride(from: 0, to: words.count, by: 2) {
            let keyword = words[index].uppercased()
            guard allowed.contains(keyword), options[keyword] == nil else { throw ProtocolError(.badRequest, "usage: \(usage)") }
            options[keyword] = words[index + 1]
        }
        return options
    }

    private static func logAuthor(_ options: [String: String]) throws(ProtocolError) -> LogQuery.Author? {
        switch (options["BY"], options["DEVICE"]) {
        case (nil, nil): return nil
        case (let name?, nil): return .user(try user(name))
        case (nil, let id?): return .device(try device(id))
        default: throw ProtocolError(.badRequest, "BY and DEVICE cannot be given together")
        }
    }

    /// A device as the log names it: a token id (TOKEN LIST shows it) or `password`.
    private static func device(_ id: String) throws(ProtocolError) -> String {
        guard id == "password" || Names.isLowercaseHex(id, length: 12) else {
            throw ProtocolError(.badRequest, "a device is a token id (12 hex digits, TOKEN LIST shows them) or password")
        }
        return id
    }

    static func seq(_ text: String) throws(ProtocolError) -> Int64 {
        guard let seq = Int64(text), seq >= 0 else { throw ProtocolError(.badRequest, "seq must be a non-negative integer") }
        return seq
    }

    private static func logLimit(_ text: String) throws(ProtocolError) -> Int {
        guard let limit = Int(text), (1...LogQuery.maxLimit).contains(limit) else {
            throw ProtocolError(.badRequest, "LIMIT is a whole number from 1 to \(LogQuery.maxLimit)")
        }
        return limit
    }

    /// `orConflicts`: the verb also takes a collection's conflicts companion (`<c>~conflicts`).
    static func collection(_ name: String, orConflicts: Bool = false) throws(ProtocolError) -> String {
        if orConflicts, Names.collection(ofConflicts: name) != nil { return name }
        guard Names.isValidCollection(name) else {
            throw ProtocolError(.badRequest, "invalid collection name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        }
        return name
    }

    private static func recordID(_ id: String, in collection: String) throws(ProtocolError) -> String {
        guard Names.collection(ofConflicts: collection) != nil else { return try recordID(id) }
        guard Names.isValidConflictCopyID(id) else {
            throw ProtocolError(.badRequest, "invalid conflict copy id: <id>.sync-conflict-<stamp>-<device>, at most 249 bytes")
        }
        return id
    }

    private static func recordID(_ id: String) throws(ProtocolError) -> String {
        guard Names.isValidRecordID(id) else {
            throw ProtocolError(.badRequest, "invalid record id: 1-200 bytes, no '/', control characters or leading '.'")
        }
        return id
    }

    private static func revision(_ text: String) throws(ProtocolError) -> Int64 {
        guard let rev = Int64(text), rev >= 0 else { throw ProtocolError(.badRequest, "base-rev must be a non-negative integer") }
        return rev
    }

    private static func placement(_ words: [String], usage: String) throws(ProtocolError) -> Placement {
        switch (words[0].uppercased(), words.count) {
        case ("FIRST", 1): return .first
        case ("LAST", 1): return .last
        case ("BEFORE", 2): return .before(try recordID(words[1]))
        case ("AFTER", 2): return .after(try recordID(words[1]))
        default: throw ProtocolError(.badRequest, "usage: \(usage)")
        }
    }
}
