/// What a connection has written and the kernel has not taken yet, in order: its own small
/// writes coalesced into one buffer, and references to bytes shared with other connections
/// (a broadcast), each sealed behind what came before it. Knows no socket: `TCPConnection`
/// drains it.
struct OutputQueue {
    /// Bytes written since the queue was last sealed (small writes coalesce here).
    private(set) var outbox: [UInt8] = []
    /// What goes out next, in order.
    private(set) var segments: [(bytes: SharedBytes, range: Range<Int>)] = []
    /// Bytes in `segments`.
    private(set) var segmentBytes = 0

    var count: Int { outbox.count + segmentBytes }
    var isEmpty: Bool { outbox.isEmpty && segments.isEmpty }

    mutating func append(_ bytes: [UInt8]) { outbox.append(contentsOf: bytes) }
    mutating func append(_ bytes: ArraySlice<UInt8>) { outbox.append(contentsOf: bytes) }
    mutating func append(_ text: String) { outbox.append(contentsOf: text.utf8) }

    /// Shared bytes shorter than this are copied into the outbox instead: a reference costs
    /// more than copying a short change line (a retain, a segment, a buffer list for the
    /// kernel), and what sharing saves is memory, which only large broadcasts take.
    static let smallestShared = 2048

    mutating func append(_ shared: SharedBytes, range: Range<Int>) {
        guard range.count >= Self.smallestShared else {
            outbox.append(contentsOf: UnsafeRawBufferPointer(start: shared.base + range.lowerBound, count: range.count))
            return
        }
        seal()
        segments.append((shared, range))
        segmentBytes += range.count
    }

    /// Moves the outbox behind the segments, as bytes of its own (one copy).
    mutating func seal() {
        guard !outbox.isEmpty else { return }
        segments.append((SharedBytes(outbox), 0..<outbox.count))
        segmentBytes += outbox.count
        outbox.removeAll(keepingCapacity: outbox.capacity <= 64 * 1024)
    }

    /// The outbox alone was sent but for its first `written` bytes: the rest becomes a segment.
    mutating func outboxSent(_ written: Int) {
        if written < outbox.count {
            segments.append((SharedBytes(outbox[written...]), 0..<(outbox.count - written)))
            segmentBytes += outbox.count - written
        }
        outbox.removeAll(keepingCapacity: outbox.capacity <= 64 * 1024)
    }

    /// Drops the first `count` bytes of the segments (the kernel took them).
    mutating func dropFirst(_ count: Int) {
        var left = count
        segmentBytes -= count
        var taken = 0
        while left > 0, taken < segments.count {
            let length = segments[taken].range.count
            if length <= left {
                left -= length
                taken += 1
            } else {
                segments[taken].range = (segments[taken].range.lowerBound + left)..<segments[taken].range.upperBound
                left = 0
            }
        }
        segments.removeFirst(taken)
    }

    /// Everything, in order, as one buffer (for a layer that must transform it, as TLS does).
    mutating func takeAll() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for (shared, range) in segments { bytes += shared[range] }
        bytes += outbox
        removeAll()
        return bytes
    }

    /// The first segments, about `limit` bytes of them, handed over: cut after the last newline
    /// before `limit` (a line protocol's queue then starts at a line, so what is not handed over
    /// yet can be dropped whole lines at a time), or after the first one past it when there is
    /// none before.
    mutating func takeSegments(endingAtALineWithin limit: Int) -> [(bytes: SharedBytes, range: Range<Int>)] {
        guard segmentBytes > limit else { return takeSegments() }
        var taken: [(bytes: SharedBytes, range: Range<Int>)] = []
        var total = 0
        while !segments.isEmpty {
            let (shared, range) = segments[0]
            if total + range.count <= limit {
                taken.append(segments.removeFirst())
                total += range.count
                continue
            }
            let bytes = UnsafeRawBufferPointer(start: shared.base + range.lowerBound, count: range.count)
            let window = max(0, limit - total)
            var cut = bytes[..<window].lastIndex(of: 0x0A).map { $0 + 1 }
            if cut == nil, let last = taken.last, last.bytes.base.load(fromByteOffset: last.range.upperBound - 1, as: UInt8.self) == 0x0A { break }
            if cut == nil { cut = bytes.firstIndex(of: 0x0A).map { $0 + 1 } }
            guard let cut, cut < range.count else {
                // No line ends in this segment (or it ends with its last byte): all of it goes.
                taken.append(segments.removeFirst())
                total += range.count
                if cut != nil { break }
                continue
            }
            taken.append((shared, range.lowerBound..<(range.lowerBound + cut)))
            segments[0].range = (range.lowerBound + cut)..<range.upperBound
            total += cut
            break
        }
        segmentBytes -= total
        return taken
    }

    /// The segments, handed over (the queue keeps none).
    mutating func takeSegments() -> [(bytes: SharedBytes, range: Range<Int>)] {
        defer {
            segments = []
            segmentBytes = 0
        }
        return segments
    }

    mutating func removeAll() {
        outbox.removeAll()
        segments.removeAll()
        segmentBytes = 0
    }

    /// Replaces the outbox with `bytes` (what a TLS layer made of the plaintext).
    mutating func replaceOutbox(with bytes: [UInt8]) {
        outbox = bytes
    }
}
