/// One budget for the bytes all connections hold (`ServerConfiguration.maxBufferedBytes`): each
/// connection's own bounds keep it small, this keeps their sum bounded whatever their number.
/// Sends add to an estimate (drains are not counted, so it only errs high); when the estimate
/// passes the budget, and once a second, the connections are counted exactly, and if they hold
/// more than the budget the ones not logged in go first, then the slowest readers.
extension Server {
    func noteQueued(_ bytes: Int) {
        bufferedEstimate += bytes
        if bufferedEstimate > configuration.maxBufferedBytes, loop.nowMilliseconds >= budgetRecountAt { enforceMemoryBudget() }
    }

    func enforceMemoryBudget() {
        guard !enforcingBudget else { return }
        enforcingBudget = true
        defer { enforcingBudget = false }
        var total = 0
        for session in sessions.values { total += session.bufferedBytes }
        bufferedEstimate = total
        let budget = configuration.maxBufferedBytes
        guard total > budget else { return }
        // Not logged in first, then the largest holders: one pass frees a quarter of the budget,
        // so a steady overload does not recount on every send.
        let candidates = sessions.values.filter { $0.closeReason == nil }.map { (session: $0, bytes: $0.bufferedBytes) }
            .sorted { ($0.session.user == nil ? 1 : 0, $0.bytes) > ($1.session.user == nil ? 1 : 0, $1.bytes) }
        for candidate in candidates where total > budget - budget / 4 && candidate.session.closeReason == nil {
            total -= candidate.bytes
            shedTotal += 1
            ServerLog.info("closing \(candidate.session.user ?? "a connection not logged in") at \(candidate.session.address): connections hold more than --max-buffered-bytes \(budget) (this one \(candidate.bytes))")
            if candidate.session.user == nil {
                candidate.session.shed(.busy)
            } else {
                candidate.session.shed(.slow)
            }
        }
        bufferedEstimate = total
        // Still over (what is left is held by connections already closing): not recounted on
        // every send meanwhile.
        budgetRecountAt = total > budget - budget / 4 ? loop.nowMilliseconds + 100 : 0
    }
}
