/// A request target taken apart: the path's segments (percent-decoded, so a record id may hold
/// spaces or slashes' neighbours) and the query's parameters.
public struct HTTPTarget: Sendable, Equatable {
    /// `/api/collections/desk%20lamp` → `["api", "collections", "desk lamp"]`.
    public var segments: [String]
    public var query: [String: String]

    /// Nil when a segment's percent-encoding is not UTF-8 or is cut short. Read as bytes (a
    /// target is ASCII on the wire): it is taken apart once a request.
    public init?(_ target: String) {
        var text = target
        let slash = UInt8(ascii: "/"), question = UInt8(ascii: "?"), ampersand = UInt8(ascii: "&"), equals = UInt8(ascii: "=")
        let parsed: (segments: [String], query: [String: String])? = text.withUTF8 { all in
            let bytes = Self.originFormBytes(all)
            let pathEnd = bytes.firstIndex(of: question) ?? bytes.endIndex
            var segments: [String] = []
            var start = bytes.startIndex
            while start < pathEnd {
                let end = bytes[start..<pathEnd].firstIndex(of: slash) ?? pathEnd
                if end > start {
                    guard let segment = Self.percentDecoded(bytes[start..<end], plusIsSpace: false) else { return nil }
                    segments.append(segment)
                }
                start = end + 1
            }
            var query: [String: String] = [:]
            var pair = pathEnd + 1
            while pair < bytes.endIndex {
                let end = bytes[pair...].firstIndex(of: ampersand) ?? bytes.endIndex
                if end > pair {
                    let split = bytes[pair..<end].firstIndex(of: equals) ?? end
                    guard let key = Self.percentDecoded(bytes[pair..<split], plusIsSpace: true),
                        let value = Self.percentDecoded(bytes[min(split + 1, end)..<end], plusIsSpace: true)
                    else { return nil }
                    query[key] = value
                }
                pair = end + 1
            }
            return (segments, query)
        }
        guard let parsed else { return nil }
        segments = parsed.segments
        query = parsed.query
    }

    /// The path and query of a target in absolute form (`http://host:port/path?query`, which
    /// RFC 9112 §3.2.2 says a server must accept, as a proxy sends it); other targets as they are.
    public static func originForm(_ target: String) -> Substring {
        guard target.utf8.first != UInt8(ascii: "/") else { return Substring(target) }
        var copy = target
        let range = copy.withUTF8 { all -> Range<Int> in
            let form = originFormBytes(all)
            return form.startIndex..<form.endIndex
        }
        let utf8 = target.utf8
        guard range.lowerBound < utf8.count else { return "/" }
        return Substring(target[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)...])
    }

    /// `originForm` on bytes: an `http://` or `https://` scheme and authority are passed over.
    private static func originFormBytes(_ bytes: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
        let all = bytes[...]
        guard let first = bytes.first, first | 0x20 == UInt8(ascii: "h"),
            let colon = bytes.prefix(6).firstIndex(of: UInt8(ascii: ":")),
            ["http", "https"].contains(String(decoding: bytes[..<colon], as: UTF8.self).lowercased()),
            bytes[colon...].starts(with: "://".utf8)
        else { return all }
        let authority = colon + 3
        let pathStart = bytes[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
        // A bare authority (`http://host`) is the root.
        return pathStart.map { bytes[$0...] } ?? bytes[bytes.endIndex...]
    }

    /// `%XX` escapes turned into bytes (and `+` into a space in a query); nil when they do not
    /// make UTF-8. Bytes with no escape are taken as they are.
    static func percentDecoded(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, plusIsSpace: Bool) -> String? {
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(validating: bytes, as: UTF8.self)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "%"):
                guard index + 2 <= bytes.endIndex, let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else { return nil }
                decoded.append(high << 4 | low)
                index += 2
            case UInt8(ascii: "+") where plusIsSpace:
                decoded.append(0x20)
            default:
                decoded.append(byte)
            }
        }
        return String(validating: decoded, as: UTF8.self)
    }

    /// `text` with every byte outside the unreserved set written as `%XX`, for one path segment.
    public static func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension HTTPRequest {
    /// The value of cookie `name` from the `Cookie` headers.
    public func cookie(_ name: String) -> String? {
        for header in headers where header.hasName("Cookie") {
            for pair in header.value.utf8.split(separator: UInt8(ascii: ";")) {
                guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { continue }
                if Self.trimmed(pair[..<equals]).elementsEqual(name.utf8) {
                    return String(decoding: Self.trimmed(pair[pair.index(after: equals)...]), as: UTF8.self)
                }
            }
        }
        return nil
    }

    /// The token of an `Authorization: Bearer <token>` header.
    public var bearerToken: String? {
        guard let value = header("Authorization")?.utf8, let space = value.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        guard HTTPHeader.equalIgnoringASCIICase(value[..<space], "Bearer") else { return nil }
        return String(decoding: Self.trimmed(value[value.index(after: space)...]), as: UTF8.self)
    }

    /// Without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        var text = bytes
        while let first = text.first, first == 0x20 || first == 0x09 { text = text.dropFirst() }
        while let last = text.last, last == 0x20 || last == 0x09 { text = text.dropLast() }
        return text
    }
}

extension Substring {
    /// Without the leading and trailing characters found in `characters`.
    public func trimming(_ characters: String) -> Substring {
        var text = self
        while let first = text.first, characters.contains(first) { text.removeFirst() }
        while let last = text.last, characters.contains(last) { text.removeLast() }
        return text
    }
}

extension String {
    /// Without the leading and trailing characters found in `characters`.
    public func trimming(_ characters: String) -> Substring { Substring(self).trimming(characters) }
}
