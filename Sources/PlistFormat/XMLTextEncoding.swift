/// The text encodings an XML plist arrives in, brought to UTF-8 before it is parsed.
///
/// Apple's older tools and CPython's plistlib (`test_xml_encodings`) write UTF-16 with a byte
/// order mark; XML 1.0 (appendix F) also lets a UTF-16 document go without one when it starts
/// with `<`. Files are always written back as UTF-8.
enum XMLTextEncoding {
    /// `bytes` as UTF-8: UTF-16 text converted (its mark dropped), anything else as it was (the
    /// reader checks that it is UTF-8); nil for UTF-16 that does not decode (an odd length, a
    /// lone surrogate), which no reader should guess at.
    static func utf8(_ bytes: [UInt8]) -> [UInt8]? {
        guard let bigEndian = utf16ByteOrder(bytes) else { return bytes }
        let start = bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) ? 2 : 0
        guard (bytes.count - start) % 2 == 0 else { return nil }
        var units: [UInt16] = []
        units.reserveCapacity((bytes.count - start) / 2)
        var index = start
        while index + 1 < bytes.count {
            let (first, second) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
            units.append(bigEndian ? first << 8 | second : second << 8 | first)
            index += 2
        }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(units.count)
        var decoder = UTF16()
        var iterator = units.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): UTF8.encode(scalar) { utf8.append($0) }
            case .emptyInput: return utf8
            case .error: return nil
            }
        }
    }

    /// True for big-endian UTF-16, false for little-endian, nil when the text is not UTF-16.
    private static func utf16ByteOrder(_ bytes: [UInt8]) -> Bool? {
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0x00, 0x3C, 0x00]) { return true }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0x3C, 0x00, 0x3F]) { return false }
        return nil
    }
}
