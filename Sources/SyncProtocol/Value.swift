import Foundation

/// A property-list value: what one field of a record holds.
///
/// Plists have no null; integers and reals are distinct types and stay distinct through every
/// encoding PlistSync uses. Integers run over the whole range plists carry, −2⁶³ … 2⁶⁴−1:
/// `.integer` holds Int64's range and `.largeInteger` the rest, so each integer has exactly one
/// spelling (build one from text or a `UInt64` through `Value.integer(parsing:)` and
/// `Value.unsigned(_:)`).
public enum Value: Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case largeInteger(LargeInteger)
    case real(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([Value])
    case dictionary([String: Value])
}

/// The fields of one record: a plist dictionary.
public typealias Fields = [String: Value]
