import Foundation
import SyncProtocol

/// Writes XML plists the way Apple's tools do (tabs, sorted keys), so files diff cleanly.
enum XMLPlistWriter {
    static func encode(_ value: Value) -> [UInt8] {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        write(value, indent: 0, into: &out)
        out += "</plist>\n"
        return Array(out.utf8)
    }

    private static func write(_ value: Value, indent: Int, into out: inout String) {
        let tabs = String(repeating: "\t", count: indent)
        switch value {
        case .string(let text): out += "\(tabs)<string>\(escaped(text))</string>\n"
        case .integer(let integer): out += "\(tabs)<integer>\(integer)</integer>\n"
        case .real(let real): out += "\(tabs)<real>\(realText(real))</real>\n"
        case .bool(let flag): out += "\(tabs)<\(flag ? "true" : "false")/>\n"
        // Whole seconds, `Z` right after, as Foundation writes them: PropertyListSerialization,
        // NSDictionary(contentsOfFile:) and plistlib refuse a fraction.
        case .date(let date): out += "\(tabs)<date>\(ISO8601UTC.format(PlistFile.wholeSeconds(date)))</date>\n"
        case .data(let data): out += "\(tabs)<data>\(data.base64EncodedString())</data>\n"
        case .array(let items):
            guard !items.isEmpty else { return out += "\(tabs)<array/>\n" }
            out += "\(tabs)<array>\n"
            for item in items { write(item, indent: indent + 1, into: &out) }
            out += "\(tabs)</array>\n"
        case .dictionary(let members):
            guard !members.isEmpty else { return out += "\(tabs)<dict/>\n" }
            out += "\(tabs)<dict>\n"
            for key in members.keys.sorted() {
                out += "\(tabs)\t<key>\(escaped(key))</key>\n"
                write(members[key]!, indent: indent + 1, into: &out)
            }
            out += "\(tabs)</dict>\n"
        }
    }

    private static func realText(_ real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "+infinity" : "-infinity" }
        return String(real)
    }

    private static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
