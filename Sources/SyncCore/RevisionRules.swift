/// The revision rules of every write, whatever store keeps the records: a write names the
/// revision it was based on, and goes in only when that is the record's current one. Pure, so
/// each store (SQLite today, others later) decides the same way and a test pins the rules once.
public enum RevisionRules {
    /// What a PUT based on `baseRev` does.
    public enum Put: Equatable, Sendable {
        /// Replaces the live record: the new rev; it keeps its place in the order.
        case update(rev: Int64, position: String)
        /// Makes the record (new, or again over its tombstone): the new rev; it goes last.
        case create(rev: Int64)
        /// The base is stale (or names a record that is not there): answered with CONFLICT.
        case conflict
    }

    /// A PUT over `current`: a live record needs its current rev; a tombstone is re-created
    /// from scratch (base 0) or from the tombstone's own rev (someone who saw the delete); a
    /// record never seen needs base 0.
    public static func put(baseRev: Int64, over current: RecordState?) -> Put {
        put(baseRev: baseRev, replacing: current?.head)
    }

    /// `put` from what the check needs of the record (a store that reads no more of it).
    public static func put(baseRev: Int64, replacing current: RecordHead?) -> Put {
        guard let current else { return baseRev == 0 ? .create(rev: 1) : .conflict }
        if let position = current.position {
            return current.rev == baseRev ? .update(rev: baseRev + 1, position: position) : .conflict
        }
        return baseRev == 0 || baseRev == current.rev ? .create(rev: current.rev + 1) : .conflict
    }

    /// A DEL over `current`: the tombstone's rev, or nil (CONFLICT) when the record is not live
    /// or the base is stale. Deleting a deleted record is a conflict too: the caller learns it
    /// is gone instead of making a second tombstone.
    public static func delete(baseRev: Int64, over current: RecordState?) -> Int64? {
        delete(baseRev: baseRev, replacing: current?.head)
    }

    /// `delete` from what the check needs of the record.
    public static func delete(baseRev: Int64, replacing current: RecordHead?) -> Int64? {
        guard let current, current.position != nil, current.rev == baseRev else { return nil }
        return current.rev + 1
    }

    /// A MOVE over `current`: the new rev and the fields it keeps, or nil (CONFLICT) when the
    /// record is not live or the base is stale.
    public static func move(baseRev: Int64, over current: RecordState?) -> (rev: Int64, fieldsJSON: String)? {
        guard let current, case .live(_, let fieldsJSON) = current.body, current.rev == baseRev else { return nil }
        return (current.rev + 1, fieldsJSON)
    }

    /// A REVERT's write over `current`: the new rev, or nil (CONFLICT) when the record moved on
    /// from `baseRev` since the revert was planned (0: it did not exist).
    public static func restore(baseRev: Int64, replacing current: RecordHead?) -> Int64? {
        guard let current else { return baseRev == 0 ? 1 : nil }
        return current.rev == baseRev ? current.rev + 1 : nil
    }
}

/// What a write's revision check needs of the record it would replace: its rev and, while it is
/// live, its place (nil: a tombstone).
public struct RecordHead: Equatable, Sendable {
    public var rev: Int64
    public var position: String?

    public init(rev: Int64, position: String?) {
        self.rev = rev
        self.position = position
    }
}

extension RecordState {
    public var head: RecordHead { RecordHead(rev: rev, position: position) }
}
