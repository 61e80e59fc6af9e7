import SyncProtocol

/// The state of one record as the server holds it: live with fields, or a tombstone.
public struct RecordState: Equatable, Sendable {
    /// Live fields, kept as their canonical JSON so the broadcast path never re-encodes them.
    public enum Body: Equatable, Sendable {
        case live(position: String, fieldsJSON: String)
        case deleted
    }

    public var id: String
    public var rev: Int64
    public var body: Body

    public init(id: String, rev: Int64, body: Body) {
        self.id = id
        self.rev = rev
        self.body = body
    }

    /// `<rev> <position> {fields}` or `<rev> - DELETED`, the tail shared by GET, CHANGE and CONFLICT.
    /// Bytes its fields take in the store (0 for a tombstone).
    /// Where it sorts; nil for a tombstone.
    public var position: String? {
        if case .live(let position, _) = body { return position }
        return nil
    }

    /// The fields as canonical JSON; nil for a tombstone.
    public var fieldsJSON: String? {
        if case .live(_, let fieldsJSON) = body { return fieldsJSON }
        return nil
    }

    public var storedFieldBytes: Int {
        if case .live(_, let fieldsJSON) = body { return fieldsJSON.utf8.count }
        return 0
    }

    public var wireTail: String {
        switch body {
        case .live(let position, let fieldsJSON): "\(rev) \(position) \(fieldsJSON)"
        case .deleted: "\(rev) - DELETED"
        }
    }
}

/// An earlier state of a record's fields, kept when a PUT or DEL replaced them, so a person
/// can look back and restore one: the rev it had, its fields, and when it was replaced
/// (seconds since 1970). Kept as long as tombstones are (`--tombstone-ttl`). A state that
/// lived less than `minimumAge` is not kept: a burst of saves (an app typing, a script
/// rewriting a record many times a second) leaves its last state, not one row a save, which
/// would cost every write an insert and the disk a copy of every record it ever was.
public struct RecordVersion: Equatable, Sendable {
    public var rev: Int64
    public var fieldsJSON: String
    public var replacedAt: Int64

    public init(rev: Int64, fieldsJSON: String, replacedAt: Int64) {
        self.rev = rev
        self.fieldsJSON = fieldsJSON
        self.replacedAt = replacedAt
    }

    /// Seconds a state must have lived to be kept when replaced (`serve --version-min-age`).
    public static let defaultMinimumAge: Int64 = 60

    /// Whether replacing `previous` (written at `writtenAt`) with `next` at `now` keeps
    /// `previous` as a version: its fields were live, are gone or changed (a MOVE keeps the
    /// fields: no version), and had lived at least `minimumAge` seconds.
    public static func isKept(replacing previous: RecordState?, writtenAt: Int64?, with next: RecordState, at now: Int64, minimumAge: Int64) -> Bool {
        isKept(fields: previous?.fieldsJSON, writtenAt: writtenAt, replacedBy: next, at: now, minimumAge: minimumAge)
    }

    /// `isKept` from the fields replaced (nil: a tombstone), for a store that reads them only
    /// once `isOldEnough` says they may be kept.
    public static func isKept(fields old: String?, writtenAt: Int64?, replacedBy next: RecordState, at now: Int64, minimumAge: Int64) -> Bool {
        guard let old, let writtenAt, isOldEnough(writtenAt: writtenAt, at: now, minimumAge: minimumAge) else { return false }
        return next.fieldsJSON != old
    }

    /// Whether fields written at `writtenAt` have lived long enough by `now` to be kept.
    public static func isOldEnough(writtenAt: Int64, at now: Int64, minimumAge: Int64) -> Bool {
        now - writtenAt >= minimumAge
    }
}

extension RecordCursor {
    /// The cursor at a live record (nil for a tombstone: it has no place).
    public init?(_ state: RecordState) {
        guard let position = state.position else { return nil }
        self.init(position: position, id: state.id)
    }
}

/// One committed change: a record's new state and the server-wide sequence number it got.
public struct Change: Equatable, Sendable {
    public var collection: String
    public var seq: Int64
    public var state: RecordState
    /// Bytes of fields this change added to the store (negative when it freed some), as the
    /// writer saw it: what per-user byte quotas count. Zero for changes read back from the store.
    public var storedBytesDelta: Int

    public init(collection: String, seq: Int64, state: RecordState, storedBytesDelta: Int = 0) {
        self.collection = collection
        self.seq = seq
        self.state = state
        self.storedBytesDelta = storedBytesDelta
    }

    /// The `* CHANGE` line subscribers receive, with its LF.
    public var line: String {
        "* CHANGE \(collection) \(seq) \(ResponseLine.argument(state.id)) \(state.wireTail)\n"
    }
}
