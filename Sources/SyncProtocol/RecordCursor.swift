/// A place in a collection's order: records sort by (position, id), both compared by their
/// bytes; a page of a listing starts after one.
public struct RecordCursor: Equatable, Hashable, Sendable {
    public var position: String
    public var id: String

    public init(position: String, id: String) {
        self.position = position
        self.id = id
    }

    /// Whether `self` sorts before `other`, position first, then id, by bytes.
    public func precedes(_ other: RecordCursor) -> Bool {
        if position != other.position { return position.utf8.lexicographicallyPrecedes(other.position.utf8) }
        return id.utf8.lexicographicallyPrecedes(other.id.utf8)
    }
}
