/// A crowded gap re-keyed locally: the records nearest the gap (a few on each side) get fresh
/// keys spread between the keys of the records just outside them, so a MOVE costs a bounded
/// number of writes and CHANGEs whatever the collection's size or history.
public enum LocalRekey {
    /// Records taken on each side of the gap at first; quadrupled while the keys they would
    /// get are longer than `PositionKey.respacedLength` (at the ends of the collection the
    /// bounds are open, so the whole collection always fits).
    public static let firstReach = 8

    /// The new states for a MOVE whose gap (`lower`, `upper`) has no short key left: the
    /// re-keyed neighbours (rev + 1, same fields) and, last, the moved record `id`
    /// (`baseRev + 1`), all in the order they take.
    public static func states<Lookup: NeighbourLookup>(
        moving id: String, baseRev: Int64, fieldsJSON: String, between lower: String?, _ upper: String?, in lookup: Lookup
    ) throws(Lookup.Failure) -> [RecordState] {
        var reach = firstReach
        while true {
            let below = try lower.map { key throws(Lookup.Failure) in try lookup.records(atOrBelow: key, limit: reach + 1) } ?? []
            let above = try upper.map { key throws(Lookup.Failure) in try lookup.records(atOrAbove: key, limit: reach + 1) } ?? []
            let outerLower = below.count > reach ? below[reach].position : nil
            let outerUpper = above.count > reach ? above[reach].position : nil
            let window = Array(below.prefix(reach).reversed()) + [nil] + Array(above.prefix(reach)).map(Optional.some)
            let wholeCollection = outerLower == nil && outerUpper == nil
            if let keys = try? PositionKey.spread(count: window.count, between: outerLower, outerUpper),
                wholeCollection || keys.allSatisfy({ $0.utf8.count <= PositionKey.respacedLength }) {
                var neighbours: [RecordState] = []
                var moved: RecordState?
                for (record, key) in zip(window, keys) {
                    guard let record else {
                        moved = RecordState(id: id, rev: baseRev + 1, body: .live(position: key, fieldsJSON: fieldsJSON))
                        continue
                    }
                    neighbours.append(RecordState(id: record.id, rev: record.rev + 1, body: .live(position: key, fieldsJSON: record.fieldsJSON ?? "{}")))
                }
                return neighbours + [moved!]
            }
            precondition(!wholeCollection, "keys can always be spread between open ends")
            reach *= 4
        }
    }
}
