import Foundation

/// A property-list value: what one field of a record holds.
///
/// Plists have no null; integers and reals are distinct types and stay distinct through every
/// encoding PlistSync uses.
public enum Value: Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([Value])
    case dictionary([String: Value])
}

/// The fields of one record: a plist dictionary.
public typealias Fields = [String: Value]
