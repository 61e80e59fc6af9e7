import Foundation
import SyncProtocol

/// Parses the XML plist subset: prolog, DOCTYPE, comments, and the plist elements.
struct XMLPlistReader {
    private let bytes: [UInt8]
    /// The text claimed to be UTF-16 and did not decode.
    private let isBrokenUTF16: Bool
    private var index = 0

    /// `bytes` in UTF-8, UTF-16 (big- or little-endian, found by its byte order mark or by the
    /// `<` the document starts with, as XML 1.0 appendix F detects it) or UTF-8 with a mark.
    init(_ bytes: [UInt8]) {
        let text = XMLTextEncoding.utf8(bytes)
        self.bytes = text ?? []
        isBrokenUTF16 = text == nil
    }

    private func failure(_ reason: String) -> PlistFile.ParseError {
        PlistFile.ParseError("XML plist, byte \(index): \(reason)")
    }

    mutating func read() throws(PlistFile.ParseError) -> Value {
        guard !isBrokenUTF16 else { throw failure("UTF-16 text that does not decode (an odd length or a lone surrogate)") }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        guard String(validating: bytes[index...], as: UTF8.self) != nil else { throw failure("not UTF-8 or UTF-16 text") }
        skipMisc()
        var tag = try readTag()
        var wrapped = false
        if tag.name == "plist", !tag.isClosing {
            wrapped = !tag.isEmpty
            skipMisc()
            tag = try readTag()
        }
        let value = try readValue(opening: tag, depth: 0)
        skipMisc()
        if wrapped {
            let closing = try readTag()
            guard closing.name == "plist", closing.isClosing else { throw failure("expected </plist>") }
            skipMisc()
        }
        guard index == bytes.count else { throw failure("text after the plist") }
        return value
    }

    private struct Tag {
        var name: String
        var isClosing: Bool
        var isEmpty: Bool
    }

    private mutating func readValue(opening tag: Tag, depth: Int) throws(PlistFile.ParseError) -> Value {
        guard depth < PlistFile.maxDepth else { throw failure("nested deeper than \(PlistFile.maxDepth)") }
        guard !tag.isClosing else { throw failure("unexpected </\(tag.name)>") }
        switch tag.name {
        case "dict":
            var members: [String: Value] = [:]
            if tag.isEmpty { return .dictionary(members) }
            while true {
                skipMisc()
                let next = try readTag()
                if next.name == "dict", next.isClosing { return .dictionary(members) }
                guard next.name == "key", !next.isClosing else { throw failure("expected <key> in <dict>") }
                let key = next.isEmpty ? "" : try readText(closing: "key")
                skipMisc()
                let valueTag = try readTag()
                members[key] = try readValue(opening: valueTag, depth: depth + 1)
            }
        case "array":
            var items: [Value] = []
            if tag.isEmpty { return .array(items) }
            while true {
                skipMisc()
                let next = try readTag()
                if next.name == "array", next.isClosing { return .array(items) }
                items.append(try readValue(opening: next, depth: depth + 1))
            }
        case "true", "false":
            if !tag.isEmpty {
                let text = try readText(closing: tag.name)
                guard text.allSatisfy(\.isWhitespace) else { throw failure("<\(tag.name)> must be empty") }
            }
            return .bool(tag.name == "true")
        default:
            let text = tag.isEmpty ? "" : try readText(closing: tag.name)
            return try scalar(tag.name, text)
        }
    }

    private func scalar(_ name: String, _ text: String) throws(PlistFile.ParseError) -> Value {
        if name == "string" { return .string(text) }
        let trimmed = Self.trimmingSpace(text)
        switch name {
        case "integer":
            if let integer = Value.integer(parsing: trimmed) { return integer }
            if trimmed.lowercased().hasPrefix("0x"), let hex = UInt64(trimmed.dropFirst(2), radix: 16) { return .unsigned(hex) }
            guard Value.isIntegerText(trimmed) else { throw failure("bad <integer> \(trimmed)") }
            throw failure("<integer> \(trimmed) is outside \(Value.integerRangeText)")
        case "real":
            switch trimmed.lowercased() {
            case "nan": return .real(.nan)
            case "+infinity", "infinity", "inf": return .real(.infinity)
            case "-infinity", "-inf": return .real(-.infinity)
            default:
                guard let real = Double(trimmed) else { throw failure("bad <real> \(trimmed)") }
                return .real(real)
            }
        case "date":
            guard let date = ISO8601UTC.parse(String(trimmed)) else { throw failure("bad <date> \(trimmed)") }
            return .date(date)
        case "data":
            let compact = trimmed.filter { !$0.isWhitespace }
            guard let data = Data(base64Encoded: compact) else { throw failure("bad base64 in <data>") }
            return .data(data)
        default:
            throw failure("unknown element <\(name)>")
        }
    }

    /// `text` without the XML white space around it (Foundation's trimming costs a bridge to
    /// NSString per value).
    private static func trimmingSpace(_ text: String) -> Substring {
        let utf8 = text.utf8
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) }) else { return "" }
        return text[first...last]
    }

    /// Skips white space, the XML declaration, DOCTYPE and comments.
    private mutating func skipMisc() {
        while true {
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
            if starts(with: "<?") {
                skip(past: "?>")
            } else if starts(with: "<!--") {
                skip(past: "-->")
            } else if starts(with: "<!") {
                skip(past: ">")
            } else {
                return
            }
        }
    }

    /// Whether the bytes at `index` are `text` (compared in place: this runs once per byte of
    /// text, so it must not allocate).
    private func starts(with text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return text.withUTF8Buffer { pattern in
            for offset in 0..<count where bytes[index + offset] != pattern[offset] { return false }
            return true
        }
    }

    private mutating func skip(past text: StaticString) {
        while index < bytes.count {
            if starts(with: text) {
                index += text.utf8CodeUnitCount
                return
            }
            index += 1
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func readTag() throws(PlistFile.ParseError) -> Tag {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else { throw failure("expected an element") }
        index += 1
        var isClosing = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "/") {
            isClosing = true
            index += 1
        }
        // The name runs to the first space, `/` or `>`; attributes are skipped.
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: ">"), bytes[index] != UInt8(ascii: "/"), !Self.isSpace(bytes[index]) { index += 1 }
        let nameEnd = index
        while index < bytes.count, bytes[index] != UInt8(ascii: ">") { index += 1 }
        guard index < bytes.count else { throw failure("unterminated element") }
        let isEmpty = index > start && bytes[index - 1] == UInt8(ascii: "/")
        index += 1
        let name = String(decoding: bytes[start..<nameEnd], as: UTF8.self)
        guard !name.isEmpty else { throw failure("empty element name") }
        return Tag(name: name, isClosing: isClosing, isEmpty: isEmpty)
    }

    /// Text up to `</name>`, with entities and CDATA decoded.
    private mutating func readText(closing name: String) throws(PlistFile.ParseError) -> String {
        var text: [UInt8] = []
        while true {
            guard index < bytes.count else { throw failure("unterminated <\(name)>") }
            let byte = bytes[index]
            if byte != UInt8(ascii: "<"), byte != UInt8(ascii: "&") {
                text.append(byte)
                index += 1
                continue
            }
            if starts(with: "<![CDATA[") {
                index += 9
                while index < bytes.count, !starts(with: "]]>") {
                    text.append(bytes[index])
                    index += 1
                }
                index += 3
                continue
            }
            if starts(with: "<!--") {
                skip(past: "-->")
                continue
            }
            if byte == UInt8(ascii: "<") {
                let tag = try readTag()
                guard tag.isClosing, tag.name == name else { throw failure("expected </\(name)>") }
                return String(decoding: text, as: UTF8.self)
            }
            if byte == UInt8(ascii: "&") {
                text.append(contentsOf: try readEntity())
                continue
            }
            text.append(byte)
            index += 1
        }
    }

    private mutating func readEntity() throws(PlistFile.ParseError) -> [UInt8] {
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: ";"), index - start < 12 { index += 1 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else { throw failure("bad entity") }
        let name = String(decoding: bytes[(start + 1)..<index], as: UTF8.self)
        index += 1
        switch name {
        case "amp": return [UInt8(ascii: "&")]
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            var code: UInt32?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                code = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                code = UInt32(name.dropFirst())
            }
            guard let code, let scalar = Unicode.Scalar(code) else { throw failure("unknown entity &\(name);") }
            return Array(String(Character(scalar)).utf8)
        }
    }
}
