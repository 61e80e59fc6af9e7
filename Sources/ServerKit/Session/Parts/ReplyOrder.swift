import SyncCore

/// A connection's record writes in flight, in request order: each keeps a slot until its
/// commit's reply fills it, and replies leave from the head only, so they go out in the order
/// the requests came even when commits answer out of it.
final class ReplyOrder {
    private var slots: [(reply: ServerOutput?, bytes: Int)] = []
    private var head = 0
    /// Request bytes of the writes not answered yet.
    private(set) var bytesInFlight = 0

    /// No write is waiting for its reply to go out.
    var isEmpty: Bool { head == slots.count }
    var writesInFlight: Int { slots.count - head }

    /// A slot for a write of `bytes` request bytes, answered by `fill`.
    func reserve(bytes: Int) -> Int {
        slots.append((nil, bytes))
        bytesInFlight += bytes
        return slots.count - 1
    }

    func fill(_ slot: Int, with reply: ServerOutput) {
        slots[slot].reply = reply
        bytesInFlight -= slots[slot].bytes
    }

    /// The head's reply once it is filled (the slot is then done), nil while it is not.
    func takeReady() -> ServerOutput? {
        guard head < slots.count, let ready = slots[head].reply else { return nil }
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: slots.capacity <= 4096)
            head = 0
        }
        return ready
    }
}
