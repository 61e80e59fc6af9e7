import Foundation

extension ValueJSON {
    /// Encodes `value` as compact JSON; dictionary keys are sorted so equal values encode equally.
    public static func encode(_ value: Value) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Encodes a record's fields as a JSON object.
    public static func encode(fields: Fields) -> String {
        encode(.dictionary(fields))
    }

    /// A JSON string literal for `text`, for quoting arguments and error messages.
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        writeString(text, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func write(_ value: Value, into out: inout [UInt8]) {
        switch value {
        case .string(let text):
            writeString(text, into: &out)
        case .integer(let integer):
            out.append(contentsOf: String(integer).utf8)
        case .largeInteger(let integer):
            out.append(contentsOf: String(integer.value).utf8)
        case .real(let real):
            out.append(contentsOf: realText(real).utf8)
        case .bool(let flag):
            out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .date(let date):
            out.append(contentsOf: "{\"$date\":\"".utf8)
            out.append(contentsOf: ISO8601UTC.format(date).utf8)
            out.append(contentsOf: "\"}".utf8)
        case .data(let data):
            out.append(contentsOf: "{\"$data\":\"".utf8)
            out.append(contentsOf: data.base64EncodedString().utf8)
            out.append(contentsOf: "\"}".utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (offset, item) in items.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let members):
            out.append(UInt8(ascii: "{"))
            for (offset, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key.hasPrefix("$") ? "$" + member.key : member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Text for a real that always reads back as a real: it has a `.` or an exponent.
    static func realText(_ real: Double) -> String {
        guard real.isFinite else {
            // JSON has no infinity or NaN; the nearest values that read back as reals.
            return real.isNaN ? "0.0" : (real > 0 ? "1.7976931348623157e308" : "-1.7976931348623157e308")
        }
        let text = String(real)
        if text.contains(".") || text.contains("e") { return text }
        return text + ".0"
    }

    /// Appends `text` as a JSON string literal to `out` (no String made on the way).
    public static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let utf8 = text.utf8
        // Fast path: most strings need no escape and are copied in one go.
        let plain = utf8.withContiguousStorageIfAvailable { !$0.contains(where: needsEscape) } ?? !utf8.contains(where: needsEscape)
        if plain {
            out.append(contentsOf: utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}
