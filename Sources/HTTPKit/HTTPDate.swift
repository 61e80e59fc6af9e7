import Foundation

/// The `Date` header's text, IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
public enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The text for a time in whole seconds since 1970 (UTC). The calendar is the C library's
    /// (`gmtime_r`); the names are English whatever the locale, as the header requires.
    public static func text(secondsSince1970 seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
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
