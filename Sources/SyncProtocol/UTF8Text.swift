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
        isASCII(bytes) || validate(bytes, bytes.indices) != nil
    }

    /// Whether no byte has its high bit set, eight bytes at a time.
    static func isASCII(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            let words = raw.count / 8
            var highBits: UInt64 = 0
            for word in 0..<words { highBits |= raw.loadUnaligned(fromByteOffset: word * 8, as: UInt64.self) }
            for index in (words * 8)..<raw.count { highBits |= UInt64(raw[index]) }
            return highBits & 0x8080_8080_8080_8080 == 0
        }
    }
}
