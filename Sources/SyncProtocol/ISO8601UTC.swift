import Foundation

/// ISO 8601 timestamps in UTC (`2020-01-01T00:00:00Z`, fractional seconds allowed), the wire form
/// of plist dates. Hand-rolled: Foundation's formatters are slow and not thread-safe everywhere.
public enum ISO8601UTC {
    /// Reads `YYYY-MM-DDTHH:MM:SS[.fraction]Z`; nil when the text is not exactly that.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var result = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                result = result * 10 + Int(byte - 0x30)
            }
            return result
        }
        let separators: [(Int, UInt8)] = [(4, 0x2D), (7, 0x2D), (10, 0x54), (13, 0x3A), (16, 0x3A)]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1 }),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count > 21, bytes[20..<(bytes.count - 1)].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let parsed = Double("0." + String(decoding: bytes[20..<(bytes.count - 1)], as: UTF8.self))
            else { return nil }
            fraction = parsed
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        guard year >= 1 else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days * 86_400 + hour * 3_600 + minute * 60 + second)
        // The same sum `format` checked: whole seconds since 2001, plus the fraction.
        let date = Date(timeIntervalSinceReferenceDate: Double(seconds - referenceOffset) + fraction)
        // What `format` will write must still be a four-digit year (near year 9999 a Double
        // holds ~30 µs, so the last fraction of the last second rounds into year 10000).
        return isRepresentable(date) ? date : nil
    }

    /// Seconds from 1970-01-01 to 2001-01-01, the reference date Foundation's `Date` (and an
    /// NSDate in a plist) counts from.
    static let referenceOffset: Int64 = 978_307_200

    /// Seconds since 1970 of 0001-01-01T00:00:00Z, the earliest date the wire form can carry.
    public static let earliestSeconds: Double = -62_135_596_800
    /// Seconds since 1970 of 10000-01-01T00:00:00Z, the first instant it cannot.
    public static let latestSeconds: Double = 253_402_300_800

    /// Whether `date` falls within years 0001–9999.
    public static func isRepresentable(_ date: Date) -> Bool {
        let total = date.timeIntervalSince1970
        return total.isFinite && total >= earliestSeconds && total < latestSeconds
    }

    /// Writes a date with the fewest fractional digits that read back as exactly the same
    /// `Date` (the Double an app stored: seconds since 2001), so a date survives any number of
    /// trips through the wire bit-identical. A date outside years 0001–9999 (see
    /// `isRepresentable`) is written as the nearest end of that range, never trapping: readers
    /// refuse such dates before they get here.
    public static func format(_ date: Date) -> String {
        var total = date.timeIntervalSinceReferenceDate
        if !isRepresentable(date) {
            let seconds = date.timeIntervalSince1970
            total = (seconds.isNaN || seconds < earliestSeconds ? earliestSeconds : latestSeconds - 1) - Double(referenceOffset)
        }
        let whole = total.rounded(.down)
        let seconds = Int64(whole) + referenceOffset
        let days = Int(floorDivide(seconds, 86_400))
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = civilFromDays(days)
        var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
        text += pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if total > whole { text += "." + fractionDigits(total - whole, whole: whole, total: total) }
        return text + "Z"
    }

    /// The shortest decimal digits of `fraction` (in (0, 1), exactly `total - whole`) whose
    /// value added to `whole` gives `total` again, as `parse` adds them.
    private static func fractionDigits(_ fraction: Double, whole: Double, total: Double) -> String {
        // Past 20 places, the fraction's exact binary expansion (a Double has at most 1074
        // fractional binary digits, so as many decimal ones).
        for places in Array(1...20) + [1_074] {
            let rounded = String(format: "%.\(places)f", fraction)
            // Rounded up to 1: more places are needed.
            guard rounded.hasPrefix("0."), let value = Double(rounded), value > 0, whole + value == total || places == 1_074 else { continue }
            var digits = String(rounded.dropFirst(2))
            while digits.hasSuffix("0") { digits.removeLast() }
            return digits
        }
        return "0"
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
