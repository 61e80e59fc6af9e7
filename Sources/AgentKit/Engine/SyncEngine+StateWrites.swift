/// Writes to the agent's state file (`.plistsync/state.sqlite`). The engine goes on from the
/// state in memory whatever a write does; one that fails (a full disk) is logged once and shown
/// in `status` until a write succeeds again, which writes the whole state again. A restart
/// before then starts from the state last written, and what the files hold beyond it is found
/// again (pushed, merged or replayed).
extension SyncEngine {
    static let stateProblemKey = ".plistsync/state.sqlite"

    func saveState(_ write: () throws -> Void) {
        do {
            try write()
            // The first write to succeed after a failure writes everything again.
            try state.catchUp()
            guard !status.problems.isEmpty, status.problems[Self.stateProblemKey] != nil else { return }
            status.clearProblem(for: Self.stateProblemKey)
            log("the agent's state is written again")
            status.changed()
        } catch {
            state.markBehind()
            if status.problems[Self.stateProblemKey] == nil { log("cannot write the agent's state: \(error)") }
            status.report("cannot write the agent's state (\(error)); it is kept in memory, and a restart before it is written finds the changes again", for: Self.stateProblemKey)
            status.changed()
        }
    }
}
