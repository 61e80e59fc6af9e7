/// An integer from 2⁶³ to 2⁶⁴−1: the upper half of the range plists carry, beyond Int64.
///
/// Binary plists write these as 16-byte integers and XML as decimal text; plistlib, libplist and
/// the Rust plist crate read them. Only values above `Int64.max` can be made, so a number never
/// has two spellings in `Value` (5 is always `.integer(5)`).
public struct LargeInteger: Hashable, Sendable, CustomStringConvertible {
    /// The value, always above `Int64.max`.
    public let value: UInt64

    /// Nil unless `value` is above `Int64.max`.
    public init?(_ value: UInt64) {
        guard value > UInt64(Int64.max) else { return nil }
        self.value = value
    }

    public var description: String { String(value) }
}

extension Value {
    /// Text for the integer range, for error messages.
    public static let integerRangeText = "-9223372036854775808...18446744073709551615"

    /// `value` as a plist integer, in its one spelling.
    public static func unsigned(_ value: UInt64) -> Value {
        if let large = LargeInteger(value) { return .largeInteger(large) }
        return .integer(Int64(value))
    }

    /// A decimal integer (`-?[0-9]+`, a leading `+` allowed) in −2⁶³ … 2⁶⁴−1; nil when the
    /// text is not one or lies outside that range (see `isIntegerText` to tell which).
    public static func integer(parsing text: some StringProtocol) -> Value? {
        if let signed = Int64(text) { return .integer(signed) }
        if let unsigned = UInt64(text) { return .unsigned(unsigned) }
        return nil
    }

    /// Whether `text` is written as a decimal integer, whatever its size.
    public static func isIntegerText(_ text: some StringProtocol) -> Bool {
        var digits = Substring(text)
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }
}
