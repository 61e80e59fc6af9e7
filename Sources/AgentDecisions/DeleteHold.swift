import SyncCore

/// Many files of one collection deleted at once (DESIGN.md §5, mass deletes): whether deletes
/// about to go up pass the limit, and what a look at held deletes decides. Pure: the agent keeps
/// the times and the held ids, looks at the files and the request file, and carries it out.
public enum DeleteHold {
    /// Whether `adding` more deletes would make more than `limit` within `window` seconds of
    /// `now`, given the times (in seconds) of the deletes sent (`recent`, pruned to the window in
    /// place); a `limit` of 0 never holds.
    public static func isMassDelete(recent: inout [Double], adding: Int, now: Double, limit: Int, window: Double) -> Bool {
        guard limit > 0 else { return false }
        let since = now - window
        recent.removeAll { $0 <= since }
        return recent.count + adding > limit
    }

    /// What a person asked for with `plistsync deletes`.
    public enum Request: Equatable, Sendable {
        case confirm, undo
    }

    /// The outcome of a look at held deletes.
    public enum Outcome: Equatable, Sendable {
        /// Still held: these ids (files that came back left the hold), looked at again later.
        case keepHolding([RecordID])
        /// Deleted on the server, as confirmed.
        case confirm([RecordID])
        /// The files are written back from the last synced state.
        case undo([RecordID])
        /// Nothing left to hold (every file came back), or the collection is no longer
        /// mirrored: the hold ends without a change.
        case release
    }

    /// `held`: the ids held; `stillMissing`: those whose file is still gone (one that came back,
    /// by hand or a remote edit, is no longer a delete).
    public static func look(held: Set<RecordID>, stillMissing: Set<RecordID>, request: Request?, subscribed: Bool) -> Outcome {
        let missing = held.intersection(stillMissing).sorted()
        switch request {
        case .confirm?: return .confirm(missing)
        case .undo?: return .undo(missing)
        case nil: return missing.isEmpty || !subscribed ? .release : .keepHolding(missing)
        }
    }
}
