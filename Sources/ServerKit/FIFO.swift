/// A first-in, first-out queue over an array with a moving head: O(1) amortised `popFirst`,
/// the storage compacted once the consumed part is the larger half (so a long-lived queue that
/// is never quite empty does not grow for ever).
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Element? { isEmpty ? nil : storage[head] }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        compact()
        return element
    }

    /// Removes and returns up to `limit` elements from the front.
    mutating func popFirst(_ limit: Int) -> [Element] {
        let end = head + min(limit, count)
        let taken = Array(storage[head..<end])
        head = end
        compact()
        return taken
    }

    /// Changes the element `offset` places behind the front.
    mutating func update(atOffset offset: Int, _ change: (inout Element) -> Void) {
        change(&storage[head + offset])
    }

    /// Visits the elements from the front.
    func forEach(_ body: (Element) -> Void) {
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
