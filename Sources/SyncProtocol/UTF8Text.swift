/// Strings from a range of a byte array, through a buffer pointer: the generic
/// `String(decoding:)` on an `ArraySlice` looks up type metadata on every call, which showed in
/// the server's profile at a few per cent of all time.
enum UTF8Text {
    /// The bytes as text; invalid UTF-8 is repaired with U+FFFD.
    static func decode(_ bytes: [UInt8], _ range: Range<Int>) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    /// The bytes as text, or nil when they are not valid UTF-8.
    static func validate(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        bytes.withUnsafeBufferPointer { String(validating: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    /// Whether all of `bytes` is valid UTF-8, without building a string when it is ASCII.
    static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { $0 < 0x80 } || validate(bytes, bytes.indices) != nil
    }
}
