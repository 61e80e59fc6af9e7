import SyncProtocol

/// What a REVERT writes, worked out from the log (pure): for each record the chosen author
/// changed after the seq, the state it had just before that author's first change there, written
/// as a new revision over the record's latest. A record someone else changed since is left as
/// it is (`kept`), so a revert never takes back another person's later work; a record already
/// back where the revert would put it needs nothing, which makes a revert that was cut short
/// safe to run again.
public struct RevertPlan: Equatable, Sendable {
    /// One record's write: back to `target` (nil: it did not exist, so a tombstone) over the
    /// record's latest state, at rev `baseRev`.
    public struct Step: Equatable, Sendable {
        public var id: String
        public var baseRev: Int64
        public var target: RecordState?
        /// Whose changes the write takes back.
        public var undoing: Set<String>
    }

    /// A record the author changed that someone else changed since.
    public struct Kept: Equatable, Sendable {
        public var id: String
        public var rev: Int64
        public var changedBy: LoggedAuthor
    }

    public var steps: [Step] = []
    public var kept: [Kept] = []

    /// Plans a revert to `seq` from every change after it (`changes`, in seq order, all
    /// authors) and the states the records they touch had at `seq` (absent: not there yet).
    public init(changes: [LoggedChange], statesAt: [String: RecordState], author: LogQuery.Author?) {
        var byRecord: [RecordID: [LoggedChange]] = [:]
        var order: [RecordID] = []
        for change in changes {
            let key = RecordID(change.state.id)
            if byRecord[key] == nil { order.append(key) }
            byRecord[key, default: []].append(change)
        }
        for key in order {
            let history = byRecord[key]!
            guard let first = history.firstIndex(where: { $0.author.matches(author) }), let latest = history.last else { continue }
            let base = first == 0 ? statesAt[latest.state.id] : history[first - 1].state
            guard !Self.sameBody(base, latest.state) else { continue }
            if author != nil, !latest.author.matches(author) {
                kept.append(Kept(id: latest.state.id, rev: latest.state.rev, changedBy: latest.author))
                continue
            }
            steps.append(Step(id: latest.state.id, baseRev: latest.state.rev, target: base,
                              undoing: Set(history[first...].map(\.author.user))))
        }
    }

    /// Whether a record at `target` (nil: absent) already reads as `current`: the same fields
    /// and place, or gone in both.
    static func sameBody(_ target: RecordState?, _ current: RecordState) -> Bool {
        switch (target?.body, current.body) {
        case (nil, .deleted), (.deleted?, .deleted): true
        case (.live(let position, let fields)?, .live(let currentPosition, let currentFields)): position == currentPosition && fields == currentFields
        default: false
        }
    }

    /// The state a step writes, at the rev it will get.
    public static func written(_ step: Step) -> RecordState {
        RecordState(id: step.id, rev: step.baseRev + 1, body: step.target?.body ?? .deleted)
    }

    /// The most changes after the seq one REVERT reads; more and it asks to be done in steps.
    public static let maxChanges = 100_000
}
