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

/// An earlier state of a record's fields, read from the change log, so a person can look
/// back and restore one: the rev it had, its fields, when it was replaced (seconds since 1970)
/// and by whom. Every state is kept for `--history-days`.
public struct RecordVersion: Equatable, Sendable {
    public var rev: Int64
    public var fieldsJSON: String
    public var replacedAt: Int64
    /// Who replaced it (the change log's author of the next state); `unknown` for versions
    /// kept before the log.
    public var replacedBy: LoggedAuthor

    public init(rev: Int64, fieldsJSON: String, replacedAt: Int64, replacedBy: LoggedAuthor = .unknown) {
        self.rev = rev
        self.fieldsJSON = fieldsJSON
        self.replacedAt = replacedAt
        self.replacedBy = replacedBy
    }

    /// The earlier versions in a record's logged states (oldest first, the current one last),
    /// newest first: each state whose fields a later PUT or DEL replaced (a MOVE keeps the
    /// fields, so it makes none), with who replaced it and when.
    public static func fromLog(_ states: [LoggedChange]) -> [RecordVersion] {
        var versions: [RecordVersion] = []
        for (state, next) in zip(states, states.dropFirst()) {
            guard let fields = state.state.fieldsJSON, next.state.fieldsJSON != fields else { continue }
            versions.append(RecordVersion(rev: state.state.rev, fieldsJSON: fields, replacedAt: next.at, replacedBy: next.author))
        }
        return versions.reversed()
    }
}

extension RecordCursor {
    /// The cursor at a live record (nil for a tombstone: it has no place).
    public init?(_ state: RecordState) {
        guard let position = state.position else { return nil }
        self.init(position: position, id: state.id)
    }
}

extension RecordState {
    /// Whether live `left` lists before live `right` (LIST's order: position, then id, by bytes).
    public static func inListOrder(_ left: RecordState, _ right: RecordState) -> Bool {
        RecordCursor(position: left.position ?? "", id: left.id).precedes(RecordCursor(position: right.position ?? "", id: right.id))
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
