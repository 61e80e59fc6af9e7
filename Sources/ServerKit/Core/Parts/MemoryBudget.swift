import EventLoop

/// One budget for the bytes all connections hold (`ServerConfiguration.maxBufferedBytes`): each
/// connection's own bounds keep it small, this keeps their sum bounded whatever their number.
/// Sends add to an estimate (drains are not counted, so it only errs high); when the estimate
/// passes the budget, and once a second, the connections are counted exactly, closing ones
/// included, and if they hold more than the budget it takes bytes back from those that hold
/// them: connections already closing are let go at once, then live ones not logged in, then
/// the largest live holders. A connection that holds next to nothing is never shed for it.
final class MemoryBudget {
    /// A logged-in connection holding less than this is not shed for memory: closing it would
    /// give back next to nothing (an idle client, a writer waiting for its OK).
    static let minimumSheddableBytes = 64 << 10

    private let budget: Int
    /// Bytes handed to connections since the last exact count.
    private var estimate = 0
    /// Connections closed to stay within the budget, for the metrics.
    private(set) var shedTotal = 0
    /// When a count that could not get under the budget (connections already closing hold the
    /// bytes) may be done again.
    private var recountAt: UInt64 = 0
    /// Set while connections are being closed (their BYE lines count as sends).
    private var enforcing = false

    init(maxBufferedBytes: Int) {
        budget = maxBufferedBytes
    }

    /// Bytes were handed to a connection: true when the connections should be counted now.
    func noteQueued(_ bytes: Int, now: UInt64) -> Bool {
        estimate += bytes
        return estimate > budget && now >= recountAt
    }

    /// Counts what `sessions` hold and sheds connections until they hold at most three
    /// quarters of the budget.
    func enforce(on sessions: some Collection<Session>, now: UInt64) {
        guard !enforcing else { return }
        enforcing = true
        defer { enforcing = false }
        let holders = sessions.map { (session: $0, bytes: $0.bufferedBytes) }
        var total = holders.reduce(0) { $0 + $1.bytes }
        estimate = total
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
        estimate = total
        // Still over (what is left is held by connections too small to shed): not recounted on
        // every send meanwhile.
        recountAt = total > target ? now + 100 : 0
    }
}
