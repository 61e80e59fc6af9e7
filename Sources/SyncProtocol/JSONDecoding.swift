import Foundation

/// Reads the type-preserving JSON of the wire protocol (DESIGN.md §3) into `Value`s.
///
/// Hand-written rather than `JSONSerialization`, because that one cannot tell `1` from `1.0`
/// on every platform, accepts `null`, and allocates an `NSObject` per value.
public enum ValueJSON {
    /// Nesting deeper than this is refused, so a hostile payload cannot exhaust the stack.
    public static let maxDepth = 64

    /// Parses one JSON object (a record's fields) that spans all of `bytes` but white space.
    public static func decodeFields(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> Fields {
        guard case .dictionary(let fields) = try decode(bytes) else {
            throw ProtocolError(.badRequest, "fields must be a JSON object")
        }
        return fields
    }

    /// Parses one JSON value that spans all of `bytes` but white space.
    public static func decode(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> Value {
        let array = Array(bytes)
        var reader = JSONReader(bytes: array)
        reader.skipSpace()
        let value = try reader.readValue(depth: 0)
        reader.skipSpace()
        guard reader.atEnd else { throw reader.failure("unexpected text after the JSON value") }
        return value
    }

    /// Parses one JSON value at the start of `bytes` and returns it with the index after it.
    static func decodePrefix(_ bytes: [UInt8], from start: Int) throws(ProtocolError) -> (Value, Int) {
        var reader = JSONReader(bytes: bytes, index: start)
        let value = try reader.readValue(depth: 0)
        return (value, reader.index)
    }
}

/// A cursor over JSON bytes; each `read` consumes one construct or throws `BAD_REQUEST`.
struct JSONReader {
    let bytes: [UInt8]
    var index: Int

    init(bytes: [UInt8], index: Int = 0) {
        self.bytes = bytes
        self.index = index
    }

    var atEnd: Bool { index >= bytes.count }

    func failure(_ reason: String) -> ProtocolError {
        ProtocolError(.badRequest, "bad JSON at byte \(index): \(reason)")
    }

    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func readValue(depth: Int) throws(ProtocolError) -> Value {
        guard depth < ValueJSON.maxDepth else { throw failure("nested deeper than \(ValueJSON.maxDepth)") }
        guard index < bytes.count else { throw failure("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try readObject(depth: depth)
        case UInt8(ascii: "["): return try readArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): throw failure("null is not a plist value")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw failure("unexpected character")
        }
    }

    private mutating func expectWord(_ word: String) throws(ProtocolError) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, bytes[index..<(index + expected.count)].elementsEqual(expected) else {
            throw failure("unknown literal")
        }
        index += expected.count
    }

    private mutating func readArray(depth: Int) throws(ProtocolError) -> Value {
        index += 1
        var items: [Value] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try readValue(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw failure("unterminated array") }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "]") { return .array(items) }
            guard byte == UInt8(ascii: ",") else { throw failure("expected , or ] in array") }
        }
    }

    private mutating func readObject(depth: Int) throws(ProtocolError) -> Value {
        index += 1
        var members: [String: Value] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .dictionary(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a key string")
            }
            let key = try readString()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected :") }
            index += 1
            skipSpace()
            let value = try readValue(depth: depth + 1)
            guard members.updateValue(value, forKey: key) == nil else {
                throw failure("duplicate key \(ValueJSON.quoted(key))")
            }
            skipSpace()
            guard index < bytes.count else { throw failure("unterminated object") }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "}") { return try Self.interpretObject(members, failure: failure) }
            guard byte == UInt8(ascii: ",") else { throw failure("expected , or } in object") }
        }
    }

    /// Turns `{"$date":…}` and `{"$data":…}` into their types and unescapes `$$` keys.
    private static func interpretObject(
        _ members: [String: Value], failure: (String) -> ProtocolError
    ) throws(ProtocolError) -> Value {
        if members.count == 1, let (key, value) = members.first, key.hasPrefix("$"), !key.hasPrefix("$$") {
            switch (key, value) {
            case ("$date", .string(let text)):
                guard let date = ISO8601UTC.parse(text) else { throw failure("bad $date \(ValueJSON.quoted(text))") }
                return .date(date)
            case ("$data", .string(let text)):
                guard let data = Data(base64Encoded: text) else { throw failure("bad base64 in $data") }
                return .data(data)
            default:
                throw failure("unknown typed object \(ValueJSON.quoted(key))")
            }
        }
        var dictionary: [String: Value] = [:]
        dictionary.reserveCapacity(members.count)
        for (key, value) in members {
            if key.hasPrefix("$$") {
                dictionary[String(key.dropFirst())] = value
            } else if key.hasPrefix("$") {
                throw failure("key \(ValueJSON.quoted(key)) starts with $; write it as $\(key)")
            } else {
                dictionary[key] = value
            }
        }
        return .dictionary(dictionary)
    }

    private mutating func readNumber() throws(ProtocolError) -> Value {
        let start = index
        var isReal = false
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("bad number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isReal = true
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("bad fraction") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isReal = true
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("bad exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = UTF8Text.decode(bytes, start..<index)
        if isReal {
            guard let real = Double(text), real.isFinite else { throw failure("real out of range") }
            return .real(real)
        }
        #if SIMULATION_MUTATIONS
        if Mutation.active == .bigIntegersThroughDouble, let rounded = Double(text), let integer = Int64(exactly: rounded.rounded()) { return .integer(integer) }
        #endif
        guard let integer = Value.integer(parsing: text) else { throw failure("integer outside \(Value.integerRangeText)") }
        return integer
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    mutating func readString() throws(ProtocolError) -> String {
        index += 1  // opening quote
        // Fast path: no escapes before the closing quote, so the bytes are the string.
        var end = index
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            guard let text = UTF8Text.validate(bytes, index..<end) else { throw failure("invalid UTF-8 in string") }
            index = end + 1
            return text
        }
        var utf8: [UInt8] = []
        while true {
            guard index < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else { throw failure("invalid UTF-8 in string") }
                return text
            case UInt8(ascii: "\\"):
                try readEscape(into: &utf8)
            case 0..<0x20:
                throw failure("control character in string")
            default:
                utf8.append(byte)
            }
        }
    }

    private mutating func readEscape(into utf8: inout [UInt8]) throws(ProtocolError) {
        guard index < bytes.count else { throw failure("unterminated escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): utf8.append(0x22)
        case UInt8(ascii: "\\"): utf8.append(0x5C)
        case UInt8(ascii: "/"): utf8.append(0x2F)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try readHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("lone surrogate") }
                index += 2
                let low = try readHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw failure("bad surrogate pair") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw failure("lone surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("bad \\u escape") }
            utf8.append(contentsOf: String(Character(unicode)).utf8)
        default:
            throw failure("unknown escape")
        }
    }

    private mutating func readHex4() throws(ProtocolError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("short \\u escape") }
        var result: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - 0x41 + 10)
            default: throw failure("bad hex digit")
            }
            result = result << 4 | digit
        }
        return result
    }
}
