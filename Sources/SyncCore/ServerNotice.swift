import Foundation
import SyncProtocol

/// Every untagged line a server sends besides CHANGE (`Change.line`), encoded in one place:
/// the inverse of `ServerEvent`'s reading, round-trip tested.
public enum ServerNotice: Equatable, Sendable {
    /// `* COLLECTION <name> <role|none> <seq>`.
    case collection(name: String, role: Role?, seq: Int64)
    /// `* RECORD <collection> <id> <state>`, a LIST line.
    case record(collection: String, state: RecordState)
    /// `* DROPPED <collection>`.
    case dropped(String)
    /// `* RENAMED <old> <new>`.
    case renamed(from: String, to: String)
    /// `* UNSUB <collection> REVOKED`: the subscription ended because the role was taken away.
    case unsubscribedRevoked(String)
    /// `* BYE <reason> [detail]`: the server closes the connection.
    case bye(ByeReason, detail: String? = nil)
    /// `* TOKEN <id> <created> <last-used|-> this|other <label>`, a TOKEN LIST line.
    case token(TokenInfo, isThisConnection: Bool)
    /// `* MEMBER <user> <role>`, a MEMBERS line.
    case member(user: String, role: Role)
    /// `* VERSION <collection> <id> <rev> <replaced-at> <user> <device> <label|-> <via> {fields}`,
    /// a VERSIONS line: who replaced that version, and when.
    case version(collection: String, id: String, RecordVersion)
    /// `* LOG <collection> <seq> <time> <user> <device> <label|-> <via> <id> <state>`, a LOG line.
    case logged(LoggedChange)
    /// `* REVERT <collection> <id> <state>`: a state REVERT writes (or would write).
    case revertStep(collection: String, RecordState)
    /// `* KEPT <collection> <id> <rev> <user> <device> <label|-> <via>`: a record REVERT leaves as
    /// it is, changed since by someone else (who is named).
    case revertKept(collection: String, id: String, rev: Int64, by: LoggedAuthor)
    /// `* USER <name> admin|user`, a USER LIST line.
    case user(name: String, isAdmin: Bool)
    /// `* INVITE <id> <role> <uses> <allowed> <created> <expires> <made-by> <note|->`, an INVITE LIST line.
    case invitation(Invitation)

    /// The line, with its LF.
    public var line: String {
        switch self {
        case .collection(let name, let role, let seq): "* COLLECTION \(name) \(role?.name ?? "none") \(seq)\n"
        case .record(let collection, let state): "* RECORD \(collection) \(ResponseLine.argument(state.id)) \(state.wireTail)\n"
        case .dropped(let name): "* DROPPED \(name)\n"
        case .renamed(let from, let to): "* RENAMED \(from) \(to)\n"
        case .unsubscribedRevoked(let collection): "* UNSUB \(collection) REVOKED\n"
        case .bye(let reason, let detail): "* BYE \(reason)\(detail.map { " " + $0 } ?? "")\n"
        case .member(let user, let role): "* MEMBER \(user) \(role.name)\n"
        case .user(let name, let isAdmin): "* USER \(name) \(isAdmin ? "admin" : "user")\n"
        case .invitation(let invitation):
            "* INVITE \(invitation.id) \(invitation.role.name) \(invitation.uses) \(invitation.usesAllowed) \(Self.time(invitation.createdAt)) "
                + "\(Self.time(invitation.expiresAt)) \(invitation.madeBy) \(ResponseLine.argument(invitation.note ?? "-"))\n"
        case .version(let collection, let id, let version):
            "* VERSION \(collection) \(ResponseLine.argument(id)) \(version.rev) \(Self.time(version.replacedAt)) \(version.replacedBy.wireWords) \(version.fieldsJSON)\n"
        case .logged(let change):
            "* LOG \(change.collection) \(change.seq) \(Self.time(change.at)) \(change.author.wireWords) \(ResponseLine.argument(change.state.id)) \(change.state.wireTail)\n"
        case .revertStep(let collection, let state): "* REVERT \(collection) \(ResponseLine.argument(state.id)) \(state.wireTail)\n"
        case .revertKept(let collection, let id, let rev, let author): "* KEPT \(collection) \(ResponseLine.argument(id)) \(rev) \(author.wireWords)\n"
        case .token(let token, let isThisConnection):
            "* TOKEN \(token.id) \(Self.time(token.createdAt)) \(token.lastUsedAt.map(Self.time) ?? "-") "
                + "\(isThisConnection ? "this" : "other") \(ResponseLine.argument(token.label ?? "-"))\(token.endsWithBrowser ? " session" : "")\n"
        }
    }

    /// Seconds since 1970 of a time as `time` writes it; nil for other text.
    public static func seconds(_ text: String) -> Int64? {
        ISO8601UTC.parse(text).map { Int64($0.timeIntervalSince1970) }
    }

    /// ISO 8601 UTC text of a time in seconds since 1970, as TOKEN lines give it.
    public static func time(_ seconds: Int64) -> String {
        ISO8601UTC.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
