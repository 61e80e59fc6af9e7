/// A request target taken apart: the path's segments (percent-decoded, so a record id may hold
/// spaces or slashes' neighbours) and the query's parameters.
public struct HTTPTarget: Sendable, Equatable {
    /// `/api/collections/desk%20lamp` → `["api", "collections", "desk lamp"]`.
    public var segments: [String]
    public var query: [String: String]

    /// Nil when a segment's percent-encoding is not UTF-8 or is cut short.
    public init?(_ target: String) {
        let parts = Self.originForm(target).split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var segments: [String] = []
        for raw in parts[0].split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = Self.percentDecoded(raw, plusIsSpace: false) else { return nil }
            segments.append(segment)
        }
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let keyValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let key = Self.percentDecoded(keyValue[0], plusIsSpace: true),
                    let value = Self.percentDecoded(keyValue.count > 1 ? keyValue[1] : "", plusIsSpace: true)
                else { return nil }
                query[key] = value
            }
        }
        self.segments = segments
        self.query = query
    }

    /// The path and query of a target in absolute form (`http://host:port/path?query`, which
    /// RFC 9112 §3.2.2 says a server must accept, as a proxy sends it); other targets as they are.
    public static func originForm(_ target: String) -> Substring {
        let text = Substring(target)
        guard let colon = text.firstIndex(of: ":"), ["http", "https"].contains(text[..<colon].lowercased()),
            text[colon...].hasPrefix("://")
        else { return text }
        let rest = text[text.index(colon, offsetBy: 3)...]
        guard let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        return rest[pathStart...]
    }

    /// `%XX` escapes turned into bytes (and `+` into a space in a query); nil when they do not
    /// make UTF-8.
    public static func percentDecoded(_ text: Substring, plusIsSpace: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(0x20)
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
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
        for header in headers where header.name.lowercased() == "cookie" {
            for pair in header.value.split(separator: ";") {
                let keyValue = pair.split(separator: "=", maxSplits: 1)
                if keyValue.count == 2, keyValue[0].trimming(" \t") == name { return String(keyValue[1].trimming(" \t")) }
            }
        }
        return nil
    }

    /// The token of an `Authorization: Bearer <token>` header.
    public var bearerToken: String? {
        guard let value = header("Authorization") else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1].trimming(" \t"))
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
