import RecordStore
import SyncCore

/// The server's in-memory view of collections and their members, for access checks on the
/// loop thread without a query. Loaded at start, updated after each committed CREATE/GRANT.
final class Directory {
    private(set) var collections: [String: RecordReader.CollectionInfo] = [:]

    init(_ infos: [RecordReader.CollectionInfo]) {
        for info in infos { collections[info.name] = info }
    }

    /// The user's role on `collection`; server admins are admin everywhere.
    func role(of user: String, isAdmin: Bool, in collection: String) -> Role? {
        guard let info = collections[collection] else { return nil }
        return isAdmin ? .admin : info.members[user]
    }

    func exists(_ collection: String) -> Bool { collections[collection] != nil }

    func lastSeq(_ collection: String) -> Int64 { collections[collection]?.lastSeq ?? 0 }

    /// Collections the user may read, with their role, in name order.
    func visible(to user: String, isAdmin: Bool) -> [(name: String, role: Role, seq: Int64)] {
        collections.values.sorted { $0.name < $1.name }.compactMap { info in
            guard let role = isAdmin ? .admin : info.members[user] else { return nil }
            return (info.name, role, info.lastSeq)
        }
    }

    func created(_ name: String, owner: String) {
        collections[name] = RecordReader.CollectionInfo(name: name, owner: owner, members: [owner: .admin], lastSeq: 0)
    }

    func granted(_ role: Role?, to user: String, in collection: String) {
        collections[collection]?.members[user] = role
    }

    func committed(_ change: Change) {
        collections[change.collection]?.lastSeq = change.seq
    }
}
