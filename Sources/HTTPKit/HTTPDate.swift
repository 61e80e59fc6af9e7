/// The `Date` header's text, IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Dec 2026 06:39:03 GMT`.
public enum HTTPDate {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The text for a time in whole seconds since 1970 (UTC), from 1970 on.
    public static func text(secondsSince1970 seconds: Int64) -> String {
        let days = seconds / 86_400
        let secondOfDay = Int(seconds % 86_400)
        let (year, month, day) = civilDate(daysSince1970: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(days % 7)]), \(two(day)) \(months[month - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Year, month (1-12) and day of a day count, in the proleptic Gregorian calendar (Howard
    /// Hinnant's days-to-civil algorithm, eras of 400 years).
    private static func civilDate(daysSince1970 days: Int64) -> (Int, Int, Int) {
        let shifted = days + 719_468
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0)), Int(month), Int(day))
    }
}

/// The current `HTTPDate` text, made again only when the second changes (one a second, not one
/// a response).
public struct HTTPDateCache {
    private var second: Int64 = .min
    private var cached = ""

    public init() {}

    /// The text for `second` (seconds since 1970).
    public mutating func text(at second: Int64) -> String {
        if second != self.second {
            self.second = second
            cached = HTTPDate.text(secondsSince1970: second)
        }
        return cached
    }
}
