/// One budget for the bytes all connections hold (`ServerConfiguration.maxBufferedBytes`): each
/// connection's own bounds keep it small, this keeps their sum bounded whatever their number.
/// Sends add to an estimate (drains are not counted, so it only errs high); when the estimate
/// passes the budget, and once a second, the connections are counted exactly, closing ones
/// included, and if they hold more than the budget it takes bytes back from those that hold
/// them: connections already closing are let go at once, then live ones not logged in, then
/// the largest live holders. A connection that holds next to nothing is never shed for it.
extension Server {
    /// A logged-in connection holding less than this is not shed for memory: closing it would
    /// give back next to nothing (an idle client, a writer waiting for its OK).
    static let minimumSheddableBytes = 64 << 10

    func noteQueued(_ bytes: Int) {
        bufferedEstimate += bytes
        if bufferedEstimate > configuration.maxBufferedBytes, loop.nowMilliseconds >= budgetRecountAt { enforceMemoryBudget() }
    }

    func enforceMemoryBudget() {
        guard !enforcingBudget else { return }
        enforcingBudget = true
        defer { enforcingBudget = false }
        let holders = sessions.values.map { (session: $0, bytes: $0.bufferedBytes) }
        var total = holders.reduce(0) { $0 + $1.bytes }
        bufferedEstimate = total
        let budget = configuration.maxBufferedBytes
        guard total > budget else { return }
        // One pass frees a quarter of the budget, so a steady overload does not recount on
        // every send.
        let target = budget - budget / 4
        // Closing already (a slow subscriber's BYE, a revoked login) but holding bytes until
        // the client reads or its grace ends: it goes now, as it was going anyway.
        for holder in holders where holder.session.closeReason != nil && holder.bytes > 0 {
            holder.session.abort()
            total -= holder.bytes
        }
        let candidates = holders.filter { holder in
            holder.session.closeReason == nil && holder.bytes > 0 && (holder.session.user == nil || holder.bytes >= Self.minimumSheddableBytes)
        }.sorted { ($0.session.user == nil ? 1 : 0, $0.bytes) > ($1.session.user == nil ? 1 : 0, $1.bytes) }
        for candidate in candidates where total > target {
            total -= candidate.bytes
            shedTotal += 1
            ServerLog.info("closing \(candidate.session.user ?? "a connection not logged in") at \(candidate.session.address): connections hold more than --max-buffered-bytes \(budget) (this one \(candidate.bytes))")
            candidate.session.shed(candidate.session.user == nil ? .busy : .slow)
        }
        bufferedEstimate = total
        // Still over (what is left is held by connections too small to shed): not recounted on
        // every send meanwhile.
        budgetRecountAt = total > target ? loop.nowMilliseconds + 100 : 0
    }
}
