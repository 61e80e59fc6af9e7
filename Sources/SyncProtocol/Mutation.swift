#if SIMULATION_MUTATIONS
import Glibc

/// Deliberately broken behaviours for the simulation's mutation check
/// (`Tests/Simulation/mutations.sh`): compiled only into the simulation's build, one chosen by
/// `PLISTSYNC_MUTATION`. The simulation must break an invariant with each; one it does not
/// catch is a hole in it. Each case is listed in `mutations.sh` too.
public enum Mutation: String, CaseIterable, Sendable {
    /// Record ids compared as Swift `String`s (canonical equivalence), not by their bytes.
    case namesComparedAsStrings = "names-compared-as-strings"
    /// A push the server refused for now (busy, unavailable) is never tried again.
    case refusedPushNeverRetried = "refused-push-never-retried"
    /// An app's stale save (from a load made before a move elsewhere) puts its old order back.
    case staleSaveOrderRuleRemoved = "stale-save-order-rule-removed"
    /// A change older than the state synced here (a line sent again) is taken as news.
    case olderChangeTaken = "older-change-taken"
    /// A merge whose fields conflict keeps the server's values and makes no conflict copy (the
    /// local values are left in the kept versions only).
    case mergeConflictCopySkipped = "merge-conflict-copy-skipped"
    /// A record edited here and deleted on the server is removed (the delete beats the edit).
    case deleteBeatsEdit = "delete-beats-edit"
    /// A push's answer records the file as it is now as synced, not the bytes that were sent:
    /// a save made while the push was in flight is never sent.
    case saveDuringPushTakenAsPushed = "save-during-push-taken-as-pushed"
    /// Binary plists write dates as seconds since 1970 instead of 2001.
    case binaryDatesFrom1970 = "binary-dates-from-1970"
    /// JSON integers are read through a Double (wrong past 2^53).
    case bigIntegersThroughDouble = "big-integers-through-double"
    /// A stale app save that replaces a value changed elsewhere keeps it in the kept versions
    /// only, not as a conflict copy.
    case staleSaveKeptAsVersion = "stale-save-kept-as-version"
    /// The server never leaves disk-full mode once in it (the seeded runs reach it only since
    /// their full disks are the store's, not answers of the harness).
    case diskFullModeNeverLeft = "disk-full-mode-never-left"
    /// The SQLite store logs an edit of fields alone (the record keeps its place) without its
    /// fields: the history misses what was written, and a revert or LIST AT would read it wrong.
    case fieldEditsNotLogged = "field-edits-not-logged"
    /// The SQLite store's reads leave out the edits whose rows are written behind: they read
    /// the rows as they lag the log.
    case waitingEditsNotLaidOver = "waiting-edits-not-laid-over"
    /// The SQLite store starts without writing the rows the log holds past `applied_seq` (the
    /// edits that waited when it stopped).
    case rowsNotCaughtUpAtStart = "rows-not-caught-up-at-start"

    /// The mutation this process runs with, if any.
    public static let active: Mutation? = getenv("PLISTSYNC_MUTATION").flatMap { Mutation(rawValue: String(cString: $0)) }
}
#endif
