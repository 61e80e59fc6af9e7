import Foundation

/// Pulls the base64 `"value":"…"` strings out of etcd watch events in a byte stream cut at
/// arbitrary points and returns them decoded, so the payloads' timestamps can be scanned.
struct Base64ValueExtractor {
    private var carry: [UInt8] = []
    private static let marker = Array("\"value\":\"".utf8)

    mutating func decode(_ chunk: [UInt8]) -> [UInt8] {
        let bytes = carry.isEmpty ? chunk : carry + chunk
        var decoded: [UInt8] = []
        var index = 0
        var consumed = 0
        let marker = Self.marker
        while index + marker.count <= bytes.count {
            guard bytes[index] == marker[0], bytes[index..<(index + marker.count)].elementsEqual(marker) else {
                index += 1
                continue
            }
            let start = index + marker.count
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { break }
            if let data = Data(base64Encoded: Data(bytes[start..<end])) { decoded += data }
            index = end + 1
            consumed = index
        }
        // Keep an unfinished value (or what may be the start of a marker) for the next chunk.
        let unfinished = index + marker.count <= bytes.count ? index : max(consumed, bytes.count - marker.count)
        carry = Array(bytes[unfinished...])
        return decoded
    }
}
