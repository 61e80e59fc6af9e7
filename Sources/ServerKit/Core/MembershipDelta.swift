import SyncCore
import SyncProtocol
import Synchronization

/// What changed in the store's collections and memberships between two reads of them: an
/// account change under a running server is applied as this, so the loop touches only what
/// changed (a `user add` or `passwd` touches nothing), and a CREATE or GRANT committed while
/// the read ran is not undone by a stale whole copy.
struct MembershipDelta: Sendable, Equatable {
    /// Collections new since the last read, with their members.
    var created: [CollectionInfo] = []
    var dropped: [String] = []
    /// Roles given, changed or taken (nil) in collections present in both reads.
    var roles: [RoleChange] = []

    struct RoleChange: Sendable, Equatable {
        var collection: String
        var user: String
        var role: Role?
    }

    var isEmpty: Bool { created.isEmpty && dropped.isEmpty && roles.isEmpty }

    /// The users whose access may differ: members of what was made or dropped, and each role changed.
    var affectedUsers: Set<String> {
        var users = Set(roles.map(\.user))
        for info in created { users.formUnion(info.members.keys) }
        return users
    }

    /// The changes from `old` (by name) to `new`; the owners and members are compared, not
    /// the seqs (those move with every write).
    static func between(_ old: [String: CollectionInfo], _ new: [String: CollectionInfo]) -> MembershipDelta {
        var delta = MembershipDelta()
        for (name, info) in new {
            guard let before = old[name], before.owner == info.owner else {
                if old[name] != nil { delta.dropped.append(name) }
                delta.created.append(info)
                continue
            }
            guard before.members != info.members else { continue }
            for (user, role) in info.members where before.members[user] != role {
                delta.roles.append(RoleChange(collection: name, user: user, role: role))
            }
            for user in before.members.keys where info.members[user] == nil {
                delta.roles.append(RoleChange(collection: name, user: user, role: nil))
            }
        }
        for name in old.keys where new[name] == nil { delta.dropped.append(name) }
        return delta
    }
}

/// What an account check found in the memberships: what changed, or (after a check whose
/// answer came too late to be applied) the whole of them again.
enum MembershipRead: Sendable {
    case delta(MembershipDelta)
    case whole([CollectionInfo])
}

/// The collections and members as the loop's `Directory` holds them, kept for the account
/// checks to diff a fresh read against, off the loop (one check runs at a time, on the
/// store-read thread), so neither the comparison nor the copies cost the loop. The loop tells
/// it of each CREATE, GRANT, DROP and RENAME it commits (`note`); while a check has the
/// baseline out, those wait in a journal and are replayed onto the read it brings back.
final class MembershipBaseline: Sendable {
    private struct State {
        /// nil while a check has it out.
        var known: [String: CollectionInfo]?
        /// Collections the loop changed while a check had the baseline out, in order (nil: gone).
        var journal: [(name: String, info: CollectionInfo?)] = []
        /// A check's answer was not applied: the next one hands the loop everything.
        var directoryMayDiffer = false
    }

    private let state: Mutex<State>

    init(_ infos: [CollectionInfo]) {
        state = Mutex(State(known: Self.index(infos)))
    }

    /// On the loop: `name` is now `info` in the directory (nil: no longer there).
    func note(_ name: String, _ info: CollectionInfo?) {
        state.withLock { state in
            if state.known != nil { state.known![name] = info } else { state.journal.append((name, info)) }
        }
    }

    /// On the loop: the last check's answer came too late and was not applied.
    func lost() {
        state.withLock { $0.directoryMayDiffer = true }
    }

    /// Off the loop: reads the store's collections with `read` and says what changed since the
    /// directory last took them in; the read, with what the loop committed meanwhile, becomes the
    /// baseline.
    func check(reading read: () throws(StoreFailure) -> [CollectionInfo]) throws(StoreFailure) -> MembershipRead {
        let (taken, whole) = state.withLock { state in
            let taken = state.known
            state.known = nil
            defer { state.directoryMayDiffer = false }
            return (taken, state.directoryMayDiffer)
        }
        let infos: [CollectionInfo]
        do {
            infos = try read()
        } catch {
            // Nothing was read: the next check starts from where this one did.
            putBack(taken ?? [:], directoryMayDiffer: whole || taken == nil)
            throw error
        }
        let next = Self.index(infos)
        let result: MembershipRead = whole || taken == nil ? .whole(infos) : .delta(MembershipDelta.between(taken!, next))
        putBack(next, directoryMayDiffer: false)
        return result
    }

    private func putBack(_ baseline: [String: CollectionInfo], directoryMayDiffer: Bool) {
        var baseline = baseline
        let journal = state.withLock { state in
            defer { state.journal = [] }
            return state.journal
        }
        for (name, info) in journal { baseline[name] = info }
        state.withLock { state in
            for (name, info) in state.journal { baseline[name] = info }
            state.journal = []
            state.known = baseline
            state.directoryMayDiffer = state.directoryMayDiffer || directoryMayDiffer
        }
    }

    private static func index(_ infos: [CollectionInfo]) -> [String: CollectionInfo] {
        var byName: [String: CollectionInfo] = [:]
        byName.reserveCapacity(infos.count)
        for info in infos { byName[info.name] = info }
        return byName
    }
}
