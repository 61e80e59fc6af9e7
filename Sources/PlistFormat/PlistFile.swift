import Foundation
import SyncProtocol

/// Reads and writes property-list files in the two formats apps use, keeping every plist type.
///
/// Hand-written rather than Foundation's `PropertyListSerialization`, whose Linux version hands
/// back `NSNumber`s that blur integer, real and bool. Pure: bytes in, bytes out.
public enum PlistFile {
    /// The on-disk encodings; a file is written back in the one it had.
    public enum Format: String, Sendable, Equatable {
        case xml
        case binary
    }

    /// Why bytes are not a plist (or not a dictionary, where one is needed).
    public struct ParseError: Error, Equatable, CustomStringConvertible, Sendable {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    /// Nesting deeper than this is refused, so a hostile file cannot exhaust the stack.
    public static let maxDepth = 64

    /// A UID (an object reference in a keyed archive) is read as `{"CF$UID": n}`, the way XML
    /// plists spell it, and such a one-key dictionary is written back as a UID in binary, as
    /// Apple's tools do.
    public static let uidKey = "CF$UID"

    /// `{"CF$UID": n}`: a UID value.
    public static func uidValue(_ index: UInt64) -> Value {
        .dictionary([uidKey: .unsigned(index)])
    }

    /// The UID a dictionary stands for, when it is exactly `{"CF$UID": n}` with 0 ≤ n < 2⁶⁴
    /// (the widest UID a binary plist holds, as plistlib writes them).
    public static func uid(in members: [String: Value]) -> UInt64? {
        guard members.count == 1 else { return nil }
        switch members[uidKey] {
        case .integer(let number)? where number >= 0: return UInt64(number)
        case .largeInteger(let number)?: return number.value
        default: return nil
        }
    }

    /// Parses XML or binary plist bytes; returns the value and the format it was in.
    public static func decode(_ bytes: [UInt8]) throws(ParseError) -> (Value, Format) {
        if bytes.starts(with: Array("bplist00".utf8)) {
            var reader = BinaryPlistReader(bytes)
            return (try reader.read(), .binary)
        }
        var reader = XMLPlistReader(bytes)
        return (try reader.read(), .xml)
    }

    /// Parses a record file: its top level must be a dictionary.
    public static func decodeRecord(_ bytes: [UInt8]) throws(ParseError) -> (Fields, Format) {
        let (value, format) = try decode(bytes)
        guard case .dictionary(let fields) = value else { throw ParseError("the top level is not a dictionary") }
        return (fields, format)
    }

    /// Encodes `value` in `format`.
    public static func encode(_ value: Value, as format: Format) -> [UInt8] {
        switch format {
        case .xml: XMLPlistWriter.encode(value)
        case .binary: BinaryPlistWriter.encode(value)
        }
    }

    // MARK: - Date precision

    /// A date as XML can hold it: whole seconds (rounded down).
    public static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }

    /// `read` (fields just read from a file) with each date that is `stored`'s date cut to
    /// whole seconds given back its fraction: a file format that cannot hold sub-seconds (XML)
    /// must not make the agent push a change nobody made, nor lose the precision others have.
    public static func restoringSubsecondDates(_ read: Value, from stored: Value) -> Value {
        switch (read, stored) {
        case (.date(let date), .date(let precise)) where date == wholeSeconds(precise):
            return .date(precise)
        case (.array(let items), .array(let preciseItems)) where items.count == preciseItems.count:
            return .array(zip(items, preciseItems).map { restoringSubsecondDates($0, from: $1) })
        case (.dictionary(let members), .dictionary(let preciseMembers)):
            var result = members
            for (key, value) in members {
                if let precise = preciseMembers[key] { result[key] = restoringSubsecondDates(value, from: precise) }
            }
            return .dictionary(result)
        default:
            return read
        }
    }
}
