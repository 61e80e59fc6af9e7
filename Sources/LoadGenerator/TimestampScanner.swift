/// Finds `"t":<digits>` timestamps in a byte stream cut at arbitrary points: each payload of
/// the fan-out shape carries one, so counting them counts deliveries whatever the protocol.
struct TimestampScanner {
    private var carry: [UInt8] = []
    private static let marker = Array("\"t\":".utf8)

    /// Calls `found` with each complete timestamp in `chunk` (and in what the last chunk left).
    mutating func scan(_ chunk: [UInt8], found: (UInt64) -> Void) {
        let bytes = carry.isEmpty ? chunk : carry + chunk
        var index = 0
        var consumed = 0
        let marker = Self.marker
        while index + marker.count < bytes.count {
            if bytes[index] == marker[0], bytes[index + 1] == marker[1], bytes[index + 2] == marker[2], bytes[index + 3] == marker[3] {
                var cursor = index + marker.count
                var value: UInt64 = 0
                while cursor < bytes.count, bytes[cursor] >= 0x30, bytes[cursor] <= 0x39 {
                    value = value * 10 + UInt64(bytes[cursor] - 0x30)
                    cursor += 1
                }
                guard cursor < bytes.count else { break }
                found(value)
                index = cursor
                consumed = cursor
                continue
            }
            index += 1
        }
        carry = Array(bytes[max(consumed, bytes.count - 40)...])
    }
}
