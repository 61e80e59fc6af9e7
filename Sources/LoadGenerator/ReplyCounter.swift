/// Counts replies in a byte stream cut at arbitrary points: lines (Redis, NATS), or
/// occurrences of a marker: PostgreSQL's ReadyForQuery (`Z`, length 5), an HTTP status line
/// (etcd), a watch's `"created":true`.
struct ReplyCounter {
    private let marker: [UInt8]?
    private var carry: [UInt8] = []

    /// Counts lines.
    init() {
        marker = nil
    }

    init(marker: [UInt8]) {
        self.marker = marker
    }

    mutating func count(_ bytes: [UInt8]) -> Int {
        guard let marker else { return bytes.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } }
        let data = carry.isEmpty ? bytes : carry + bytes
        var found = 0
        var index = 0
        while index + marker.count <= data.count {
            if data[index] == marker[0], data[index..<(index + marker.count)].elementsEqual(marker) {
                found += 1
                index += marker.count
            } else {
                index += 1
            }
        }
        // What is left may be the start of a marker the next chunk finishes.
        carry = Array(data[index...])
        return found
    }
}
