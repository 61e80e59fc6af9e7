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

    /// The mutation this process runs with, if any.
    public static let active: Mutation? = getenv("PLISTSYNC_MUTATION").flatMap { Mutation(rawValue: String(cString: $0)) }
}
#endif
