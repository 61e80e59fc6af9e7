import Foundation
import SyncProtocol

/// Writes XML plists the way Apple's tools do (tabs, sorted keys), so files diff cleanly.
/// Bytes are appended directly (no String building): whole app files of thousands of records
/// are rewritten on every synced change.
enum XMLPlistWriter {
    private static let header = Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """.utf8)
    private static let footer = Array("</plist>\n".utf8)

    static func encode(_ value: Value) -> [UInt8] {
        var out = header
        out.reserveCapacity(4096)
        write(value, indent: 0, into: &out)
        out += footer
        return out
    }

    private static func write(_ value: Value, indent: Int, into out: inout [UInt8]) {
        switch value {
        case .string(let text): element("string", escaping: text, indent: indent, into: &out)
        case .integer(let integer): element("integer", plain: String(integer), indent: indent, into: &out)
        case .largeInteger(let integer): element("integer", plain: String(integer.value), indent: indent, into: &out)
        case .real(let real): element("real", plain: realText(real), indent: indent, into: &out)
        case .bool(let flag): line(flag ? "<true/>" : "<false/>", indent: indent, into: &out)
        // Whole seconds, `Z` right after, as Foundation writes them: PropertyListSerialization,
        // NSDictionary(contentsOfFile:) and plistlib refuse a fraction.
        case .date(let date): element("date", plain: ISO8601UTC.format(PlistFile.wholeSeconds(date)), indent: indent, into: &out)
        case .data(let data): element("data", plain: data.base64EncodedString(), indent: indent, into: &out)
        case .array(let items):
            guard !items.isEmpty else { return line("<array/>", indent: indent, into: &out) }
            line("<array>", indent: indent, into: &out)
            for item in items { write(item, indent: indent + 1, into: &out) }
            line("</array>", indent: indent, into: &out)
        case .dictionary(let members):
            guard !members.isEmpty else { return line("<dict/>", indent: indent, into: &out) }
            line("<dict>", indent: indent, into: &out)
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                element("key", escaping: key, indent: indent + 1, into: &out)
                write(member, indent: indent + 1, into: &out)
            }
            line("</dict>", indent: indent, into: &out)
        }
    }

    private static func line(_ text: StaticString, indent: Int, into out: inout [UInt8]) {
        tabs(indent, into: &out)
        text.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\n"))
    }

    /// `<name>text</name>` for text that needs no escaping (numbers, dates, base64).
    private static func element(_ name: StaticString, plain text: String, indent: Int, into out: inout [UInt8]) {
        open(name, indent: indent, into: &out)
        out.append(contentsOf: text.utf8)
        close(name, into: &out)
    }

    private static func element(_ name: StaticString, escaping text: String, indent: Int, into out: inout [UInt8]) {
        open(name, indent: indent, into: &out)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): out += [0x26, 0x61, 0x6D, 0x70, 0x3B]  // &amp;
            case UInt8(ascii: "<"): out += [0x26, 0x6C, 0x74, 0x3B]  // &lt;
            case UInt8(ascii: ">"): out += [0x26, 0x67, 0x74, 0x3B]  // &gt;
            // XML readers turn a raw CR (and CR LF) into LF; a reference keeps it.
            case 0x0D: out += [0x26, 0x23, 0x31, 0x33, 0x3B]  // &#13;
            default: out.append(byte)
            }
        }
        close(name, into: &out)
    }

    private static func open(_ name: StaticString, indent: Int, into out: inout [UInt8]) {
        tabs(indent, into: &out)
        out.append(UInt8(ascii: "<"))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: ">"))
    }

    private static func close(_ name: StaticString, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "<"))
        out.append(UInt8(ascii: "/"))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: ">"))
        out.append(UInt8(ascii: "\n"))
    }

    private static func tabs(_ count: Int, into out: inout [UInt8]) {
        for _ in 0..<count { out.append(UInt8(ascii: "\t")) }
    }

    private static func realText(_ real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "+infinity" : "-infinity" }
        return String(real)
    }
}
