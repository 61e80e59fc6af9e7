import SyncCore
import SyncProtocol

/// The server's in-memory view of collections and their members, for access checks on the
/// loop thread without a query. Loaded at start (and again when the account commands change
/// the store under a running server), updated after each committed CREATE/GRANT.
///
/// Indexed by member, so `COLLECTIONS` costs the size of the caller's own list, not a sort of
/// every collection on the server.
final class Directory {
    private(set) var collections: [String: CollectionInfo] = [:]
    /// Every collection name in order (what a server admin sees), kept sorted on insert.
    private var sortedNames: [String] = []
    private var byMember: [String: Set<String>] = [:]
    private var ownedCount: [String: Int] = [:]
    /// Bytes of live record fields in the collections each user owns (kept only with quotas on).
    private var ownedBytes: [String: Int] = [:]

    init(_ infos: [CollectionInfo]) {
        load(infos)
    }

    /// Replaces everything with `infos` (a fresh read of the store).
    func load(_ infos: [CollectionInfo]) {
        collections = [:]
        byMember = [:]
        ownedCount = [:]
        for info in infos {
            collections[info.name] = info
            ownedCount[info.owner, default: 0] += 1
            for user in info.members.keys { byMember[user, default: []].insert(info.name) }
        }
        sortedNames = collections.keys.sorted()
    }

    /// A collection, or the one whose conflicts companion `name` is (it shares its members).
    private func info(_ name: String) -> CollectionInfo? {
        collections[Names.collection(ofConflicts: name) ?? name]
    }

    /// What a user may do with a name, from one lookup: the collection may not exist, or the
    /// user may have no role on it.
    enum Access: Equatable {
        case noCollection
        case noRole
        case role(Role)
    }

    func access(of user: String, isAdmin: Bool, to collection: String) -> Access {
        guard let info = info(collection) else { return .noCollection }
        if isAdmin { return .role(.admin) }
        return info.members[user].map(Access.role) ?? .noRole
    }

    /// The user's role on `collection`; server admins are admin everywhere.
    func role(of user: String, isAdmin: Bool, in collection: String) -> Role? {
        if case .role(let role) = access(of: user, isAdmin: isAdmin, to: collection) { return role }
        return nil
    }

    func exists(_ collection: String) -> Bool { info(collection) != nil }

    /// The seq of the latest change broadcast to `collection` or, for a conflicts collection,
    /// to it or its parent (the two share one entry).
    func lastSeq(_ collection: String) -> Int64 { info(collection)?.lastSeq ?? 0 }

    /// Sets the bytes each owner's collections hold, from a scan of the store.
    func loadSizes(_ bytesByCollection: [String: Int]) {
        ownedBytes = [:]
        for (collection, bytes) in bytesByCollection {
            if let owner = info(collection)?.owner { ownedBytes[owner, default: 0] += bytes }
        }
    }

    /// Bytes of record fields stored in the collections `user` owns.
    func bytesOwned(by user: String) -> Int { ownedBytes[user] ?? 0 }

    /// Bytes of writes admitted into each user's collections and not yet committed (quotas).
    private var reservedBytes: [String: Int] = [:]

    /// What a user's collections hold, with the writes in progress at their whole size.
    func bytesClaimed(by user: String) -> Int { bytesOwned(by: user) + (reservedBytes[user] ?? 0) }

    func reserve(_ bytes: Int, for user: String) { reservedBytes[user, default: 0] += bytes }

    func release(_ bytes: Int, reservedFor user: String) {
        reservedBytes[user, default: 0] -= bytes
        if reservedBytes[user] == 0 { reservedBytes[user] = nil }
    }

    /// The user who created `collection`.
    func owner(of collection: String) -> String? { info(collection)?.owner }

    /// How many collections `user` created (and so owns).
    func owned(by user: String) -> Int { ownedCount[user] ?? 0 }

    /// Collections the user may read, with their role, in name order.
    func visible(to user: String, isAdmin: Bool) -> [(name: String, role: Role, seq: Int64)] {
        let names = isAdmin ? sortedNames : (byMember[user] ?? []).sorted()
        return names.compactMap { name in
            guard let info = collections[name], let role = isAdmin ? .admin : info.members[user] else { return nil }
            return (name, role, info.lastSeq)
        }
    }

    func created(_ name: String, owner: String) {
        guard collections[name] == nil else { return }
        collections[name] = CollectionInfo(name: name, owner: owner, members: [owner: .admin], lastSeq: 0)
        ownedCount[owner, default: 0] += 1
        byMember[owner, default: []].insert(name)
        var low = 0, high = sortedNames.count
        while low < high {
            let middle = (low + high) / 2
            if sortedNames[middle] < name { low = middle + 1 } else { high = middle }
        }
        sortedNames.insert(name, at: low)
    }

    func granted(_ role: Role?, to user: String, in collection: String) {
        guard collections[collection] != nil else { return }
        collections[collection]?.members[user] = role
        if role == nil {
            byMember[user]?.remove(collection)
            if byMember[user]?.isEmpty == true { byMember[user] = nil }
        } else {
            byMember[user, default: []].insert(collection)
        }
    }

    /// The users who may read `collection`.
    func members(of collection: String) -> Set<String> {
        Set(info(collection)?.members.keys ?? [:].keys)
    }

    func dropped(_ name: String) {
        guard let info = collections.removeValue(forKey: name) else { return }
        ownedCount[info.owner, default: 1] -= 1
        for user in info.members.keys {
            byMember[user]?.remove(name)
            if byMember[user]?.isEmpty == true { byMember[user] = nil }
        }
        sortedNames.removeAll { $0 == name }
    }

    func renamed(_ from: String, to: String) {
        guard var info = collections[from] else { return }
        dropped(from)
        info.name = to
        created(to, owner: info.owner)
        collections[to] = info
        for user in info.members.keys { byMember[user, default: []].insert(to) }
    }

    /// Takes in what an account check found changed in the store.
    func apply(_ delta: MembershipDelta) {
        for name in delta.dropped { dropped(name) }
        for info in delta.created {
            created(info.name, owner: info.owner)
            for (user, role) in info.members { granted(role, to: user, in: info.name) }
            let known = collections[info.name]?.lastSeq ?? 0
            collections[info.name]?.lastSeq = max(known, info.lastSeq)
        }
        for change in delta.roles { granted(change.role, to: change.user, in: change.collection) }
    }

    func applyCommitted(_ change: Change) {
        guard let info = info(change.collection) else { return }
        collections[info.name]!.lastSeq = change.seq
        if change.storedBytesDelta != 0 { ownedBytes[info.owner, default: 0] += change.storedBytesDelta }
    }
}
