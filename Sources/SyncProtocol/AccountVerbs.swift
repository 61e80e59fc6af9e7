/// The verbs that change accounts and bring people in (USER, PASSWD, INVITE, REDEEM): their
/// entries in `CommandParser`'s table, and the checks of names, passwords and secrets they share.

/// Who redeems an invitation when the connection is not logged in: a new account it makes,
/// or an existing one, with its password.
public enum RedeemingAccount: Equatable, Sendable {
    case new(user: String, password: String)
    case existing(user: String, password: String)

    public var user: String {
        switch self {
        case .new(let user, _), .existing(let user, _): user
        }
    }
}

/// The secret of an invitation: `psi_` and 32 random bytes in hex (a token is `pst_…`).
public enum InvitationSecret {
    public static let prefix = "psi_"

    public static func isWellFormed(_ text: String) -> Bool {
        text.hasPrefix(prefix) && Names.isLowercaseHex(text.dropFirst(prefix.count), length: 64)
    }
}

extension CommandParser {
    static let accountVerbs: [VerbSpec] = [
        VerbSpec(verb: "USER", arguments: 1...4, takesPayload: false,
                 usage: "USER ADD <name> <password> [ADMIN] | USER PASSWD <name> <password> | USER REMOVE <name> | USER ADMIN <name> ON|OFF | USER LIST") {
            args, _, usage throws(ProtocolError) in
            switch (args[0].uppercased(), args.count) {
            case ("LIST", 1): return .userList
            case ("ADD", 3): return .userAdd(name: try newUser(args[1]), password: try password(args[2]), isAdmin: false)
            case ("ADD", 4) where args[3].uppercased() == "ADMIN":
                return .userAdd(name: try newUser(args[1]), password: try password(args[2]), isAdmin: true)
            case ("PASSWD", 3): return .userPassword(name: try user(args[1]), password: try password(args[2]))
            case ("REMOVE", 2): return .userRemove(name: try user(args[1]))
            case ("ADMIN", 3) where ["ON", "OFF"].contains(args[2].uppercased()):
                return .userAdmin(name: try user(args[1]), isAdmin: args[2].uppercased() == "ON")
            default: throw ProtocolError(.badRequest, "usage: \(usage)")
            }
        },
        VerbSpec(verb: "INVITE", arguments: 2...9, takesPayload: false,
                 usage: "INVITE NEW <collection> read|write|admin [EXPIRES <seconds>] [USES <n>] [NOTE <text>] | INVITE LIST <collection> | INVITE REVOKE <collection> <id> | INVITE PEEK <secret>") {
            args, _, usage throws(ProtocolError) in
            switch (args[0].uppercased(), args.count) {
            case ("LIST", 2): return .inviteList(collection: try collection(args[1]))
            case ("REVOKE", 3):
                guard Names.isLowercaseHex(args[2], length: 12) else { throw ProtocolError(.badRequest, "an invitation id is 12 hex digits (INVITE LIST shows them)") }
                return .inviteRevoke(collection: try collection(args[1]), id: args[2])
            case ("PEEK", 2): return .invitePeek(secret: try invitationSecret(args[1]))
            case ("NEW", 3...):
                guard let role = Role(name: args[2]) else { throw ProtocolError(.badRequest, "role must be read, write or admin") }
                var expires = defaultInvitationSeconds
                var uses = 1
                var note: String?
                var options = args[3...]
                while let option = options.first {
                    guard options.count >= 2 else { throw ProtocolError(.badRequest, "usage: \(usage)") }
                    let value = options[options.startIndex + 1]
                    switch option.uppercased() {
                    case "EXPIRES":
                        guard let seconds = Int64(value), (60...maxInvitationSeconds).contains(seconds) else {
                            throw ProtocolError(.badRequest, "EXPIRES takes seconds from 60 to \(maxInvitationSeconds) (a year)")
                        }
                        expires = seconds
                    case "USES":
                        guard let count = Int(value), (1...maxInvitationUses).contains(count) else {
                            throw ProtocolError(.badRequest, "USES takes a whole number from 1 to \(maxInvitationUses)")
                        }
                        uses = count
                    case "NOTE": note = try invitationNote(value)
                    default: throw ProtocolError(.badRequest, "usage: \(usage)")
                    }
                    options = options.dropFirst(2)
                }
                return .inviteNew(collection: try collection(args[1]), role: role, expiresInSeconds: expires, uses: uses, note: note)
            default: throw ProtocolError(.badRequest, "usage: \(usage)")
            }
        },
        VerbSpec(verb: "REDEEM", arguments: 1...6, takesPayload: false,
                 usage: "REDEEM <secret> [label] [SESSION] | REDEEM <secret> NEW|AS <user> <password> [label] [SESSION]") {
            args, _, usage throws(ProtocolError) in
            let secret = try invitationSecret(args[0])
            let (words, session) = sessionFlag(Array(args.dropFirst()))
            if let first = words.first, ["NEW", "AS"].contains(first.uppercased()) {
                guard (3...4).contains(words.count) else { throw ProtocolError(.badRequest, "usage: \(usage)") }
                let account: RedeemingAccount = first.uppercased() == "NEW"
                    ? .new(user: try newUser(words[1]), password: try password(words[2]))
                    : .existing(user: try user(words[1]), password: words[2])
                return .redeem(secret: secret, account: account, label: words.count == 4 ? words[3] : nil, endsWithBrowser: session)
            }
            guard words.count <= 1 else { throw ProtocolError(.badRequest, "usage: \(usage)") }
            return .redeem(secret: secret, account: nil, label: words.first, endsWithBrowser: session)
        },
        VerbSpec(verb: "PASSWD", arguments: 2...2, takesPayload: false, usage: "PASSWD <old-password> <new-password>") { args, _, _ throws(ProtocolError) in
            .passwd(old: args[0], new: try password(args[1]))
        }
    ]

    static func user(_ name: String) throws(ProtocolError) -> String {
        guard Names.isValidUser(name) else { throw ProtocolError(.badRequest, "invalid user name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}") }
        return name
    }

    /// A name for a new account: a valid one, and not the word AUTH TOKEN logs in with.
    static func newUser(_ name: String) throws(ProtocolError) -> String {
        guard !Names.isReservedUser(name) else {
            throw ProtocolError(.badRequest, "'\(name)' is reserved (AUTH TOKEN is the token login); choose another name")
        }
        return try user(name)
    }

    /// How long an invitation lasts unless told (7 days), and at most (a year).
    public static let defaultInvitationSeconds: Int64 = 7 * 86_400
    public static let maxInvitationSeconds: Int64 = 365 * 86_400
    public static let maxInvitationUses = 10_000
    public static let maxInvitationNoteBytes = 200

    static func invitationSecret(_ text: String) throws(ProtocolError) -> String {
        guard InvitationSecret.isWellFormed(text) else { throw ProtocolError(.badRequest, "an invitation secret is psi_ and 64 hex digits") }
        return text
    }

    static func invitationNote(_ text: String) throws(ProtocolError) -> String {
        guard text.utf8.count <= maxInvitationNoteBytes, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ProtocolError(.badRequest, "a note is at most \(maxInvitationNoteBytes) bytes, without control characters")
        }
        return text
    }

    /// A trailing `SESSION` word (any case): the token ends with the browser session.
    static func sessionFlag(_ words: [String]) -> (words: [String], session: Bool) {
        guard let last = words.last, last.uppercased() == "SESSION" else { return (words, false) }
        return (Array(words.dropLast()), true)
    }

    /// The most bytes a password may have (PBKDF2 takes any length; a line should not).
    public static let maxPasswordBytes = 1024

    static func password(_ text: String) throws(ProtocolError) -> String {
        guard !text.isEmpty, text.utf8.count <= maxPasswordBytes else {
            throw ProtocolError(.badRequest, "a password is 1 to \(maxPasswordBytes) bytes")
        }
        return text
    }
}
