import SyncCore
import SyncProtocol

/// Pure helpers for turning an edited order into moves.
public enum OrderPlanner {
    /// Indices (into `values`) of one longest strictly increasing subsequence.
    public static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var run: [Int] = []
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            run.append(cursor)
            cursor = previous[cursor]
        }
        return run.reversed()
    }

    /// The MOVEs that carry the user's edit of an order file from `base` (the order the file
    /// showed) to `desired` over to `current` (the order now, which may hold other people's
    /// moves). The rows off a longest run that kept its relative order are the user's moves. A
    /// row moved to the top or the bottom goes FIRST or LAST; any other next to its nearest
    /// neighbour in `desired` that nobody else moved (after the one before it, else before the
    /// one after it), so concurrent moves of other rows stay where their movers put them. A row
    /// both the user and someone else moved stays where the other put it (the server's order
    /// wins, as the server's value wins a field changed on both sides).
    public static func moves(from base: [RecordID], to desired: [RecordID], current: [RecordID]) -> [(id: RecordID, placement: Placement)] {
        let baseIndex = Dictionary(base.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let present = Set(current)
        var seen: Set<RecordID> = []
        let wanted = desired.filter { present.contains($0) && seen.insert($0).inserted }
        // A row the base did not have (listed from elsewhere) goes where the user put it.
        let based = wanted.filter { baseIndex[$0] != nil }
        let kept = Set(longestIncreasingRun(based.map { baseIndex[$0]! }).map { based[$0] })
        let known = current.filter { baseIndex[$0] != nil }
        let steady = Set(longestIncreasingRun(known.map { baseIndex[$0]! }).map { known[$0] })
        var anchors = Set(wanted.filter { kept.contains($0) && steady.contains($0) })
        var result: [(id: RecordID, placement: Placement)] = []
        for (offset, id) in wanted.enumerated() where !kept.contains(id) {
            if baseIndex[id] != nil && !steady.contains(id) { continue }
            if offset == 0 {
                result.append((id, .first))
            } else if offset == wanted.count - 1 {
                result.append((id, .last))
            } else if let previous = wanted[..<offset].last(where: anchors.contains) {
                result.append((id, .after(previous.string)))
            } else if let next = wanted[(offset + 1)...].first(where: anchors.contains) {
                result.append((id, .before(next.string)))
            } else {
                result.append((id, offset == 0 ? .first : .last))
            }
            anchors.insert(id)
        }
        return result
    }
}
