import Foundation

/// Finds `"t":<digits>` timestamps in a byte stream cut at arbitrary points: each payload of
/// the fan-out shape carries one, so counting them counts deliveries whatever the protocol.
struct TimestampScanner {
    private var carry: [UInt8] = []
    private static let marker = Array("\"t\":".utf8)

    /// Calls `found` with each complete timestamp in `chunk` (and in what the last chunk left).
    /// This scan reads every byte a subscriber receives: on the client's single thread it
    /// bounded a fan-out blast (TLS most) before the server did, so it skips with memchr.
    mutating func scan(_ chunk: [UInt8], found: (UInt64) -> Void) {
        let bytes = carry.isEmpty ? chunk : carry + chunk
        var consumed = 0
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            // The marker's last byte, `:`, ends each key of the payload only: memchr finds it,
            // and the three bytes before it tell whether it is the marker.
            var index = Self.marker.count - 1
            while index < buffer.count - 1 {
                guard let hit = memchr(base + index, Int32(UInt8(ascii: ":")), buffer.count - index) else { break }
                let colon = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
                guard buffer[colon - 1] == UInt8(ascii: "\""), buffer[colon - 2] == UInt8(ascii: "t"), buffer[colon - 3] == UInt8(ascii: "\"") else {
                    index = colon + 1
                    continue
                }
                var cursor = colon + 1
                var value: UInt64 = 0
                while cursor < buffer.count, buffer[cursor] >= 0x30, buffer[cursor] <= 0x39 {
                    value = value * 10 + UInt64(buffer[cursor] - 0x30)
                    cursor += 1
                }
                guard cursor < buffer.count else { break }
                found(value)
                index = cursor
                consumed = cursor
            }
        }
        carry = Array(bytes[max(consumed, bytes.count - 40)...])
    }
}
