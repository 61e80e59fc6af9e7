import SyncProtocol

/// What one server node tells the others sharing its store, as a short text (a PostgreSQL
/// NOTIFY payload): changes committed up to a seq, and the collection and account events each
/// node must apply to its own connections. `node` names the sender, so a node skips its own.
public struct ClusterEvent: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// Changes are committed through this seq: read them from the change log.
        case committed(throughSeq: Int64)
        case created(collection: String, owner: String)
        case dropped(collection: String)
        case renamed(from: String, to: String)
        case granted(collection: String, user: String, role: Role?)
        case tokenRevoked(hash: String)
        /// Accounts changed (`plistsync user`, or a USER verb on a node): re-read them.
        case accountsChanged
    }

    public var node: String
    public var kind: Kind

    public init(node: String, _ kind: Kind) {
        self.node = node
        self.kind = kind
    }

    /// One line of space-separated words (names never hold spaces: `Names` checks them).
    public var payload: String {
        let words: [String]
        switch kind {
        case .committed(let seq): words = ["c", String(seq)]
        case .created(let collection, let owner): words = ["n", collection, owner]
        case .dropped(let collection): words = ["d", collection]
        case .renamed(let from, let to): words = ["r", from, to]
        case .granted(let collection, let user, let role): words = ["g", collection, user, role?.name ?? "none"]
        case .tokenRevoked(let hash): words = ["t", hash]
        case .accountsChanged: words = ["a"]
        }
        return ([words[0], node] + words.dropFirst()).joined(separator: " ")
    }

    /// Reads a payload; nil for one this version does not know.
    public init?(payload: String) {
        let words = payload.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard words.count >= 2 else { return nil }
        node = words[1]
        let rest = Array(words.dropFirst(2))
        switch (words[0], rest.count) {
        case ("c", 1):
            guard let seq = Int64(rest[0]) else { return nil }
            kind = .committed(throughSeq: seq)
        case ("n", 2): kind = .created(collection: rest[0], owner: rest[1])
        case ("d", 1): kind = .dropped(collection: rest[0])
        case ("r", 2): kind = .renamed(from: rest[0], to: rest[1])
        case ("g", 3):
            let role = Role(name: rest[2])
            guard role != nil || rest[2] == "none" else { return nil }
            kind = .granted(collection: rest[0], user: rest[1], role: role)
        case ("t", 1): kind = .tokenRevoked(hash: rest[0])
        case ("a", 0): kind = .accountsChanged
        default: return nil
        }
    }

    /// The event a committed non-record operation makes, for the other nodes.
    public static func after(_ operation: StoreOperation, node: String) -> ClusterEvent? {
        switch operation {
        case .createCollection(let name, let owner): ClusterEvent(node: node, .created(collection: name, owner: owner))
        case .dropCollection(let name): ClusterEvent(node: node, .dropped(collection: name))
        case .renameCollection(let from, let to): ClusterEvent(node: node, .renamed(from: from, to: to))
        case .grant(let collection, let user, let role): ClusterEvent(node: node, .granted(collection: collection, user: user, role: role))
        case .revokeToken(let hash, _): ClusterEvent(node: node, .tokenRevoked(hash: hash))
        default: operation.changesAccounts ? ClusterEvent(node: node, .accountsChanged) : nil
        }
    }
}
