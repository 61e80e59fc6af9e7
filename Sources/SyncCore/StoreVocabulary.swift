import SyncProtocol

/// The words the server and its stores share (pure: no store's types), so any store can
/// implement the server's `ServerStore`.

/// One write the committer applies inside a group-commit transaction.
public enum StoreOperation: Sendable {
    case put(collection: String, id: String, baseRev: Int64, fieldsJSON: String, by: ChangeAuthor = .server)
    case move(collection: String, id: String, baseRev: Int64, placement: Placement, by: ChangeAuthor = .server)
    case delete(collection: String, id: String, baseRev: Int64, by: ChangeAuthor = .server)
    /// Writes a record back to `state` (its fields and place, or a tombstone when nil) as a new
    /// revision, if it is still at `baseRev`: REVERT's write.
    case restore(collection: String, id: String, baseRev: Int64, state: RecordState?, by: ChangeAuthor)
    case createCollection(name: String, owner: String)
    /// Deletes a collection, its records (and its conflict copies) and its members.
    case dropCollection(name: String)
    /// Gives a collection, its records, conflict copies and members a new name.
    case renameCollection(from: String, to: String)
    case grant(collection: String, user: String, role: Role?)
    /// `endsWithBrowser`: a console login without "keep me signed in" (the devices list says so).
    case createToken(hash: String, user: String, label: String?, endsWithBrowser: Bool = false)
    /// Revokes a token; `user` nil lets any user's token go (a server admin).
    case revokeToken(hash: String, user: String?)
    /// Notes a token's login time (seconds since 1970).
    case touchToken(hash: String, at: Int64)
    /// Deletes tombstones older than the cutoff (with their logged changes), and invitations
    /// that closed before it (expired then, or used up and made before it); and thins the
    /// change log as `history` says (never a record's latest), with the versions kept before
    /// the log.
    case purgeTombstones(updatedBefore: Int64, history: HistoryRetention)
    /// Account changes made through a server (USER, PASSWD); each raises the accounts epoch in
    /// its transaction, as the `plistsync user` commands do, so every node re-reads accounts.
    case addUser(name: String, passwordHash: String, isAdmin: Bool)
    /// A new password: the user's tokens are revoked, all but `keepingToken` (the hash of the
    /// token the user changed it through, so that device stays logged in).
    case setPassword(user: String, passwordHash: String, keepingToken: String?)
    /// Removes a user with their tokens and memberships.
    case removeUser(name: String)
    case setServerAdmin(user: String, isAdmin: Bool)
    case createInvitation(Invitation)
    /// Deletes a collection's invitation (by id) and revokes the tokens it made.
    case revokeInvitation(collection: String, id: String)
    /// Uses an invitation, all or nothing: it must exist and be open at `at`; its use is
    /// counted, the account made when `newPasswordHash` is given (else it must exist), the role
    /// given (a higher one the user has is kept), and `token` made for the user, tied to it.
    case redeemInvitation(hash: String, user: String, newPasswordHash: String?, token: InvitationToken, at: Int64)
}

/// The token a redemption makes.
public struct InvitationToken: Sendable, Equatable {
    public var hash: String
    public var label: String
    public var endsWithBrowser: Bool

    public init(hash: String, label: String, endsWithBrowser: Bool) {
        (self.hash, self.label, self.endsWithBrowser) = (hash, label, endsWithBrowser)
    }
}

/// An invitation to a collection, as the store keeps it: the secret's SHA-256 (the secret is
/// never stored), the role it gives, who made it, until when and how many times it works.
public struct Invitation: Sendable, Equatable {
    public var hash: String
    public var collection: String
    public var role: Role
    public var madeBy: String
    public var note: String?
    public var createdAt: Int64
    public var expiresAt: Int64
    public var usesAllowed: Int
    public var uses: Int

    public init(hash: String, collection: String, role: Role, madeBy: String, note: String?, createdAt: Int64, expiresAt: Int64, usesAllowed: Int, uses: Int) {
        (self.hash, self.collection, self.role, self.madeBy, self.note) = (hash, collection, role, madeBy, note)
        (self.createdAt, self.expiresAt, self.usesAllowed, self.uses) = (createdAt, expiresAt, usesAllowed, uses)
    }

    /// Its public name, as a token's: the first 12 hex digits of the hash (it redeems nothing).
    public var id: String { String(hash.prefix(TokenInfo.idLength)) }

    /// Why it can no longer be redeemed at `now`, or nil while it can.
    public func closedReason(at now: Int64) -> ProtocolError? {
        Self.closedReason(expiresAt: expiresAt, uses: Int64(uses), usesAllowed: Int64(usesAllowed), at: now)
    }

    /// The same, from a store's row.
    public static func closedReason(expiresAt: Int64, uses: Int64, usesAllowed: Int64, at now: Int64) -> ProtocolError? {
        if now >= expiresAt { return ProtocolError(.expired, "this invitation has expired; ask for a new one") }
        if uses >= usesAllowed { return ProtocolError(.expired, "this invitation has been used; ask for a new one") }
        return nil
    }
}

extension StoreOperation {
    /// Bytes this operation holds while it waits in the commit queue (for its bound).
    public var approximateBytes: Int {
        switch self {
        case .put(let collection, let id, _, let fieldsJSON, _): 64 + collection.utf8.count + id.utf8.count + fieldsJSON.utf8.count
        case .restore(let collection, let id, _, let state, _): 64 + collection.utf8.count + id.utf8.count + (state?.storedFieldBytes ?? 0)
        case .move(let collection, let id, _, _, _), .delete(let collection, let id, _, _): 64 + collection.utf8.count + id.utf8.count
        default: 128
        }
    }

    /// Whether the operation changes accounts (so every node re-reads them once it commits).
    public var changesAccounts: Bool {
        switch self {
        case .addUser, .setPassword, .removeUser, .setServerAdmin, .revokeInvitation, .redeemInvitation: true
        default: false
        }
    }
}

extension StoreOutcome {
    /// The changes to broadcast, in seq order.
    public var committedChanges: [Change] {
        switch self {
        case .changed(let change): [change]
        case .rebalanced(let change, let rekeyed): rekeyed + [change]
        default: []
        }
    }

    /// A MOVE that re-keyed its collection: `states` (`Placement.rekeyed`, the moved record
    /// last) written one by one by the store's `write`, as one outcome.
    public static func rebalanced<Failure: Error>(
        writing states: [RecordState], with write: (RecordState) throws(Failure) -> StoreOutcome
    ) throws(Failure) -> StoreOutcome {
        var changes: [Change] = []
        for state in states {
            if case .changed(let change) = try write(state) { changes.append(change) }
        }
        return .rebalanced(changes.removeLast(), rekeyed: changes)
    }
}

/// What one operation of a batch came to.
public enum StoreOutcome: Sendable, Equatable {
    /// A record changed; broadcast it.
    case changed(Change)
    /// A MOVE whose key would have passed `PositionKey.maxLength`: every other live record of
    /// the collection was given a fresh, short key first (`rekeyed`, earlier seqs), then the
    /// moved record (`change`, the latest seq). Broadcast them all, in that order.
    case rebalanced(Change, rekeyed: [Change])
    /// The base revision was stale: the record's current state, nil when it never existed.
    case conflict(collection: String, id: String, current: RecordState?)
    /// The operation broke a rule (NOT_FOUND, EXISTS, ...); nothing changed.
    case refused(ProtocolError)
    /// A non-record operation took effect.
    case done
}

/// The store's view of an account.
public struct StoredUser: Sendable, Equatable {
    public var name: String
    /// A self-describing KDF string (`pbkdf2-sha256$…`).
    public var passwordHash: String
    public var isAdmin: Bool

    public init(name: String, passwordHash: String, isAdmin: Bool) {
        self.name = name
        self.passwordHash = passwordHash
        self.isAdmin = isAdmin
    }
}

/// A token as its owner's devices list shows it; the token itself is never stored.
public struct TokenInfo: Sendable, Equatable {
    /// SHA-256 hex of the token.
    public var hash: String
    public var user: String
    public var label: String?
    public var createdAt: Int64
    public var lastUsedAt: Int64?
    /// A console login without "keep me signed in": its cookie ends with the browser.
    public var endsWithBrowser: Bool
    /// The id of the invitation that made it, if one did.
    public var invitation: String?

    public init(hash: String, user: String, label: String?, createdAt: Int64, lastUsedAt: Int64?, endsWithBrowser: Bool = false, invitation: String? = nil) {
        (self.hash, self.user, self.label, self.createdAt, self.lastUsedAt) = (hash, user, label, createdAt, lastUsedAt)
        (self.endsWithBrowser, self.invitation) = (endsWithBrowser, invitation)
    }

    /// The public name of the token: the first 12 hex digits of its hash (it cannot log in).
    public var id: String { String(hash.prefix(Self.idLength)) }
    public static let idLength = 12

    /// Whether `text` has the shape of a token id.
    public static func isID(_ text: String) -> Bool {
        Names.isLowercaseHex(text, length: idLength)
    }
}

/// A collection as the access rules need it.
public struct CollectionInfo: Sendable, Equatable {
    public var name: String
    public var owner: String
    public var members: [String: Role]
    public var lastSeq: Int64

    public init(name: String, owner: String, members: [String: Role], lastSeq: Int64) {
        self.name = name
        self.owner = owner
        self.members = members
        self.lastSeq = lastSeq
    }
}
