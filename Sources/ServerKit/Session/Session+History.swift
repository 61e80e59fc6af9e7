import SyncCore
import SyncProtocol

/// The change log's verbs: LOG (who changed what), LIST AT (the list as it was) and REVERT
/// (take changes back as new revisions).
extension Session {
    func listAt(_ tag: String, _ collection: String, seq: Int64) throws(ProtocolError) {
        try requireRole(.read, collection)
        ask(.listingAt(collection: collection, seq: seq), tag) { [self] answer in
            guard case .pastListing(let found) = answer else { return }
            guard let handle = found else { throw historyExpired(seq) }
            listingPage(tag, collection, handle, listed: 0)
        }
    }

    /// A page of the list at `seq`. The list at a seq never changes while the log reaches it,
    /// so pages read one after the other agree with each other, unlike today's.
    func listPageAt(_ tag: String, _ collection: String, seq: Int64, after: RecordCursor?, limit: Int) throws(ProtocolError) {
        try requireRole(.read, collection)
        ask(.pageAt(collection: collection, seq: seq, after: after, limit: limit), tag) { [self] answer in
            guard case .pastPage(let found) = answer else { return }
            guard let records = found else { throw historyExpired(seq) }
            if !records.isEmpty { send(.notices(records.map { .record(collection: collection, state: $0) })) }
            send(.ok(tag: tag, .listed(collection: collection, count: records.count, seq: seq)))
        }
    }

    func log(_ tag: String, _ collection: String, _ query: LogQuery) throws(ProtocolError) {
        try requireRole(.read, collection)
        ask(.log(collection: collection, query), tag) { [self] answer in
            guard case .log(let changes) = answer else { return }
            if !changes.isEmpty { send(.notices(changes.map { .logged($0) })) }
            send(.ok(tag: tag, .logged(collection: collection, count: changes.count)))
        }
    }

    /// Plans the revert from one read of the log, then writes its steps through the committer
    /// as any edit (each checked against the rev it was planned over). Taking back another
    /// user's changes needs admin on the collection; a writer may take back their own.
    func revert(_ tag: String, _ collection: String, to seq: Int64, by author: LogQuery.Author?, dryRun: Bool) throws(ProtocolError) {
        try requireRole(dryRun ? .read : .write, collection)
        ask(.revertPlan(collection: collection, seq: seq, author: author), tag) { [self] answer in
            guard case .revertPlan(let planned) = answer else { return }
            let plan: RevertPlan
            switch planned {
            case .expired: throw historyExpired(seq)
            case .tooLarge:
                throw ProtocolError(.tooLarge, "more than \(RevertPlan.maxChanges) changes since seq \(seq); revert to a later seq first")
            case .plan(let made): plan = made
            }
            let kept = plan.kept.map { ServerNotice.revertKept(collection: collection, id: $0.id, rev: $0.rev, by: $0.changedBy) }
            if dryRun {
                send(.notices(plan.steps.map { .revertStep(collection: collection, RevertPlan.written($0)) } + kept))
                return send(.ok(tag: tag, .reverted(collection: collection, written: plan.steps.count, kept: plan.kept.count, dryRun: true)))
            }
            if plan.steps.contains(where: { !$0.undoing.subtracting([user!]).isEmpty }) {
                try requireRole(.admin, collection)
            }
            if context.diskFull, plan.steps.contains(where: { $0.target?.position != nil }) {
                throw ProtocolError(.noSpace, "the server's disk is full: a revert that brings records back waits until it has room")
            }
            writeRevert(tag, collection, plan, kept: kept)
        }
    }

    private func historyExpired(_ seq: Int64) -> ProtocolError {
        ProtocolError(.expired, "the change log does not reach seq \(seq) (kept for --history-days, or seq is ahead of the store)")
    }

    /// Commits every step (a barrier: later requests wait), then answers with what was written,
    /// what was kept, and the first failure if any (running the same REVERT again finishes it).
    private func writeRevert(_ tag: String, _ collection: String, _ plan: RevertPlan, kept: [ServerNotice]) {
        guard !plan.steps.isEmpty else {
            if !kept.isEmpty { send(.notices(kept)) }
            return send(.ok(tag: tag, .reverted(collection: collection, written: 0, kept: kept.count, dryRun: false)))
        }
        wait.forCommit()
        let progress = RevertProgress(steps: plan.steps.count)
        for (index, step) in plan.steps.enumerated() {
            commit(.restore(collection: collection, id: step.id, baseRev: step.baseRev, state: step.target, by: author)) { [self] result in
                guard progress.record(result, at: index) else { return }
                var notices = kept
                var written = 0
                var failure: StoreFailure?
                for (step, result) in zip(plan.steps, progress.results) {
                    switch result {
                    case .success(.changed(let change))?:
                        notices.append(.revertStep(collection: collection, change.state))
                        written += 1
                    case .success(.conflict(_, let id, let current))?:
                        // Changed while the revert was planned: left as it is.
                        notices.append(.revertKept(collection: collection, id: id, rev: current?.rev ?? step.baseRev, by: .unknown))
                    case .failure(let error)?:
                        failure = failure ?? error
                    default:
                        break
                    }
                }
                if !notices.isEmpty { send(.notices(notices)) }
                if let failure {
                    let error = Self.commitFailure(failure)
                    return finishAsync(.error(tag: tag, ProtocolError(error.code, "\(written) of \(plan.steps.count) written; \(error.message); REVERT again to finish")))
                }
                finishAsync(.ok(tag: tag, .reverted(collection: collection, written: written, kept: notices.count - written, dryRun: false)))
            }
        }
    }
}

/// The outcomes of a revert's commits as they come back; complete once each step has one.
private final class RevertProgress {
    private(set) var results: [Result<StoreOutcome, StoreFailure>?]
    private var missing: Int

    init(steps: Int) {
        results = Array(repeating: nil, count: steps)
        missing = steps
    }

    /// Notes one outcome; true when it was the last one missing.
    func record(_ result: Result<StoreOutcome, StoreFailure>, at index: Int) -> Bool {
        results[index] = result
        missing -= 1
        return missing == 0
    }
}
