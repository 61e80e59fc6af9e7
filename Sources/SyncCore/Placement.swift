/// Where a MOVE puts a record relative to the others.
public enum Placement: Equatable, Sendable {
    case first
    case last
    case before(String)
    case after(String)
}

extension Placement {
    /// Where the moved record goes in `ids`, the other records in order (an anchor that is not
    /// among them counts as the start for `before`, the end for `after`).
    public func index(among ids: [String]) -> Int {
        switch self {
        case .first: 0
        case .last: ids.count
        case .before(let anchor): ids.firstIndex(of: anchor) ?? 0
        case .after(let anchor): (ids.firstIndex(of: anchor) ?? ids.count - 1) + 1
        }
    }
}
