/// What a LOG asks of a collection's log: the changes after `since` (the latest `limit` when
/// nil), of one author or all, at most `limit`; always in seq order.
public struct LogQuery: Sendable, Equatable {
    public enum Author: Sendable, Equatable {
        case user(String)
        /// A token id, or `password` for password logins.
        case device(String)
    }

    public var since: Int64?
    public var author: Author?
    public var limit: Int

    public init(since: Int64?, author: Author?, limit: Int) {
        (self.since, self.author, self.limit) = (since, author, limit)
    }

    public static let defaultLimit = 100
    public static let maxLimit = 1000
}

extension LogQuery.Author {
    /// `BY <user>` or `DEVICE <id>`, as LOG and REVERT take it.
    public var words: String {
        switch self {
        case .user(let name): "BY \(name)"
        case .device(let id): "DEVICE \(id)"
        }
    }
}
