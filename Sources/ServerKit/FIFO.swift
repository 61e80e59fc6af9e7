/// A first-in, first-out queue over an array with a moving head: O(1) amortised `popFirst`,
/// the storage compacted once the consumed part is the larger half (so a long-lived queue that
/// is never quite empty does not grow for ever).
public struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    public init() {}

    public var count: Int { storage.count - head }
    public var isEmpty: Bool { head == storage.count }
    public var first: Element? { isEmpty ? nil : storage[head] }

    public mutating func append(_ element: Element) {
        storage.append(element)
    }

    public mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        compact()
        return element
    }

    /// Removes and returns up to `limit` elements from the front.
    public mutating func popFirst(_ limit: Int) -> [Element] {
        let end = head + min(limit, count)
        let taken = Array(storage[head..<end])
        head = end
        compact()
        return taken
    }

    /// Changes the element `offset` places behind the front.
    public mutating func update(atOffset offset: Int, _ change: (inout Element) -> Void) {
        change(&storage[head + offset])
    }

    /// Visits the elements from the front.
    public func forEach(_ body: (Element) -> Void) {
        for index in head..<storage.count { body(storage[index]) }
    }

    private mutating func compact() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 4096)
            head = 0
        } else if head > 1024, head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}
