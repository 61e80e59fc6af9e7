import SyncCore

/// The rows people dragged in their list apps, and what the final order owes them: the
/// order-intent invariant. A move puts a row between two neighbours; at the end the server
/// still has it between them unless someone could have had reason to change that: a later
/// move of the row or a neighbour, a move from a load that did not show this one (concurrent,
/// so either may win), another move shortly before (it may arrive later), or one of the three
/// deleted or added anew since or shortly before (a save from a load that lacks a row deletes
/// it; a dragged row deleted elsewhere comes back where the agent puts it). A save that
/// moved nothing, even one from a stale load, never undoes a move.
final class OrderIntents {
    /// One drag: `row` placed after `before` and ahead of `after` in a list loaded as `load`.
    struct Move {
        let time: UInt64
        let machine: String
        let row: RecordID
        let before: RecordID?
        let after: RecordID?
        /// The rows' order as the person saw it before the drag, and after it.
        let load: [RecordID]
        let result: [RecordID]
        /// Whether the drag puts this move's rows back in an order the machine's file held
        /// before (of the rows in both): the agent cannot tell it from a stale save, and takes
        /// it for one when it wrote a newer order since the app's last save.
        let restoresAnEarlierOrder: Bool

        init(time: UInt64, machine: String, row: RecordID, before: RecordID?, after: RecordID?, load: [RecordID], result: [RecordID],
             earlierOrders: [[RecordID]]) {
            (self.time, self.machine, self.row, self.before, self.after, self.load, self.result) = (time, machine, row, before, after, load, result)
            let rows = [before, row, after].compactMap { $0 }
            restoresAnEarlierOrder = earlierOrders.contains { old in
                let common = result.filter(old.contains)
                return rows.allSatisfy(common.contains) && old.filter(common.contains) == common
            }
        }

        var rows: [RecordID] { [before, row, after].compactMap { $0 } }

        /// Whether `order` has this move's rows in its order (all of them present).
        func isKept(in order: [RecordID]) -> Bool {
            let places = rows.map { order.firstIndex(of: $0) }
            guard places.allSatisfy({ $0 != nil }) else { return false }
            return zip(places, places.dropFirst()).allSatisfy { $0! < $1! }
        }
    }

    /// How long a move may take to reach every machine in a run without faults (latency at
    /// most 40 ms; the agents settle a save within a few hundred).
    static let settleMilliseconds: UInt64 = 2_000

    private(set) var moves: [Move] = []
    /// When each row was last taken out of a list or put in anew.
    private var uprootings: [RecordID: UInt64] = [:]

    func moved(_ move: Move) {
        moves.append(move)
    }

    /// `row` was deleted from a list or added to one.
    func uprooted(_ row: RecordID, at time: UInt64) {
        uprootings[row] = time
    }

    /// The moves whose placement `order` (the server's at the end) broke without excuse.
    func broken(by order: [RecordID], skipping skipped: (RecordID) -> Bool = { _ in false }) -> [Move] {
        moves.enumerated().filter { index, move in
            guard !move.rows.contains(where: skipped), !move.restoresAnEarlierOrder else { return false }
            guard move.rows.allSatisfy(order.contains), !move.rows.contains(where: { uprootings[$0].map { $0 + Self.settleMilliseconds > move.time } ?? false })
            else { return false }
            let excused = moves.enumerated().contains { otherIndex, other in
                guard otherIndex != index else { return false }
                if other.time < move.time { return other.time + Self.settleMilliseconds > move.time }
                return move.rows.contains(other.row) || !move.isKept(in: other.load)
            }
            return !excused && !move.isKept(in: order)
        }.map(\.1)
    }
}
