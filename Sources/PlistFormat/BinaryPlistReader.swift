import Foundation
import SyncProtocol

/// Parses `bplist00` files, checking every offset and count against the file's size.
struct BinaryPlistReader {
    private let bytes: [UInt8]
    private var offsetSize = 0
    private var referenceSize = 0
    private var objectCount = 0
    private var offsetTable = 0
    /// Objects and payload bytes still allowed to be decoded: references may share objects, so
    /// a small file can name an exponential tree (each array holding the next one twice); the
    /// budget bounds what any file can make the reader build.
    private var objectsLeft = 0
    private var bytesLeft = 0
    /// UIDs already read, by object: an archive refers to each of them from many objects.
    private var uids: [Int: Value] = [:]

    /// Decoded objects at most, whatever the file's size.
    static let maxDecodedObjects = 1 << 20
    /// Decoded string and data bytes at most: 64 MiB, or 16 times the file if that is more.
    static let minDecodedBytesBudget = 64 << 20

    /// Seconds between 1970 and 2001, the binary format's date epoch.

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    private func failure(_ reason: String) -> PlistFile.ParseError {
        PlistFile.ParseError("binary plist: \(reason)")
    }

    mutating func read() throws(PlistFile.ParseError) -> Value {
        guard bytes.count >= 8 + 32 else { throw failure("too short") }
        let trailer = bytes.count - 32
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        let count = try unsigned(at: trailer + 8, size: 8)
        let top = try unsigned(at: trailer + 16, size: 8)
        let table = try unsigned(at: trailer + 24, size: 8)
        // Any width from 1 to 8 bytes: writers use 1, 2, 4 or 8, but the format allows the rest
        // and plistlib reads them (3-byte references in CPython's test_nonstandard_refs_size).
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
            count > 0, count < UInt64(bytes.count), top < count, table < UInt64(trailer),
            UInt64(table) + count * UInt64(offsetSize) <= UInt64(trailer)
        else { throw failure("bad trailer") }
        objectCount = Int(count)
        offsetTable = Int(table)
        objectsLeft = Self.maxDecodedObjects
        bytesLeft = max(Self.minDecodedBytesBudget, bytes.count * 16)
        var visiting = [Bool](repeating: false, count: objectCount)
        return try object(Int(top), depth: 0, visiting: &visiting)
    }

    private func unsigned(at position: Int, size: Int) throws(PlistFile.ParseError) -> UInt64 {
        guard position >= 0, position + size <= bytes.count else { throw failure("read past the end") }
        var value: UInt64 = 0
        for offset in 0..<size { value = value << 8 | UInt64(bytes[position + offset]) }
        return value
    }

    private func offset(of object: Int) throws(PlistFile.ParseError) -> Int {
        guard object >= 0, object < objectCount else { throw failure("object reference out of range") }
        let position = try unsigned(at: offsetTable + object * offsetSize, size: offsetSize)
        guard position >= 8, position < UInt64(offsetTable) else { throw failure("object offset out of range") }
        return Int(position)
    }

    /// A marker's count: the low nibble, or a following integer object when the nibble is 0xF.
    private func count(at position: Int, nibble: UInt8) throws(PlistFile.ParseError) -> (Int, Int) {
        guard nibble == 0xF else { return (Int(nibble), position + 1) }
        guard position + 1 < bytes.count, bytes[position + 1] & 0xF0 == 0x10 else { throw failure("bad count") }
        let size = 1 << Int(bytes[position + 1] & 0x0F)
        guard size <= 8 else { throw failure("bad count size") }
        let value = try unsigned(at: position + 2, size: size)
        guard value < UInt64(bytes.count) else { throw failure("count larger than the file") }
        return (Int(value), position + 2 + size)
    }

    /// A signed 128-bit integer, as plists write values above Int64 (and as some writers sign-
    /// extend negative ones): kept when it lies in −2⁶³ … 2⁶⁴−1, refused otherwise.
    private func integer128(high: UInt64, low: UInt64) throws(PlistFile.ParseError) -> Value {
        if high == 0 { return .unsigned(low) }
        if high == UInt64.max, low >> 63 == 1 { return .integer(Int64(bitPattern: low)) }
        throw failure("16-byte integer outside \(Value.integerRangeText)")
    }

    private mutating func spend(bytes count: Int) throws(PlistFile.ParseError) {
        bytesLeft -= count
        guard bytesLeft >= 0 else { throw failure("decodes to more than the reader's byte budget (shared references)") }
    }

    private mutating func object(_ reference: Int, depth: Int, visiting: inout [Bool]) throws(PlistFile.ParseError) -> Value {
        guard depth < PlistFile.maxDepth else { throw failure("nested deeper than \(PlistFile.maxDepth)") }
        objectsLeft -= 1
        guard objectsLeft >= 0 else { throw failure("more than \(Self.maxDecodedObjects) objects once shared references are followed") }
        let position = try offset(of: reference)
        let marker = bytes[position]
        let nibble = marker & 0x0F
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            case 0x00: throw failure("null has no plist value")
            // The format's padding byte; plistlib alone reads it as empty data.
            case 0x0F: throw failure("a fill byte (0x0F) is not a value")
            default: throw failure(String(format: "unsupported object marker 0x%02x", marker))
            }
        case 0x1:
            let size = 1 << Int(nibble)
            guard size <= 16 else { throw failure("bad integer size") }
            if size == 16 { return try integer128(high: try unsigned(at: position + 1, size: 8), low: try unsigned(at: position + 9, size: 8)) }
            // 1, 2 and 4 bytes are unsigned; 8 bytes signed (CoreFoundation's reading).
            let raw = try unsigned(at: position + 1, size: size)
            return .integer(size == 8 ? Int64(bitPattern: raw) : Int64(raw))
        case 0x2:
            switch nibble {
            case 2: return .real(Double(Float(bitPattern: UInt32(try unsigned(at: position + 1, size: 4)))))
            case 3: return .real(Double(bitPattern: try unsigned(at: position + 1, size: 8)))
            default: throw failure("bad real size")
            }
        case 0x3:
            guard marker == 0x33 else { throw failure("bad date marker") }
            let seconds = Double(bitPattern: try unsigned(at: position + 1, size: 8))
            // Seconds since 2001 as stored: the same Double (through 1970 it would lose bits).
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            guard ISO8601UTC.isRepresentable(date) else { throw failure("date outside years 0001-9999") }
            return .date(date)
        case 0x4:
            let (length, start) = try count(at: position, nibble: nibble)
            guard start + length <= bytes.count else { throw failure("data past the end") }
            try spend(bytes: length)
            return .data(Data(bytes[start..<(start + length)]))
        case 0x5:
            let (length, start) = try count(at: position, nibble: nibble)
            guard start + length <= bytes.count else { throw failure("string past the end") }
            try spend(bytes: length)
            // ASCII by the format; UTF-8 taken too, but never bytes replaced by U+FFFD.
            guard let text = String(validating: bytes[start..<(start + length)], as: UTF8.self) else { throw failure("string is not ASCII or UTF-8") }
            return .string(text)
        case 0x6:
            let (length, start) = try count(at: position, nibble: nibble)
            guard start + length * 2 <= bytes.count else { throw failure("string past the end") }
            try spend(bytes: length * 2)
            var units: [UInt16] = []
            units.reserveCapacity(length)
            for unit in 0..<length { units.append(UInt16(bytes[start + unit * 2]) << 8 | UInt16(bytes[start + unit * 2 + 1])) }
            guard let text = String(validating: units, as: UTF16.self) else { throw failure("UTF-16 string with a lone surrogate") }
            return .string(text)
        case 0x8:
            // A UID (keyed archives' object references), read as XML plists spell it.
            if let known = uids[reference] { return known }
            guard nibble < 8 else { throw failure("UID wider than 8 bytes") }
            let value = PlistFile.uidValue(try unsigned(at: position + 1, size: Int(nibble) + 1))
            uids[reference] = value
            return value
        case 0xA, 0xD:
            let (length, start) = try count(at: position, nibble: nibble)
            let isDictionary = marker >> 4 == 0xD
            let references = length * (isDictionary ? 2 : 1)
            guard start + references * referenceSize <= bytes.count else { throw failure("references past the end") }
            try spend(bytes: references * 8)
            guard !visiting[reference] else { throw failure("a container contains itself") }
            visiting[reference] = true
            defer { visiting[reference] = false }
            let objectCount = self.objectCount
            func child(_ slot: Int) throws(PlistFile.ParseError) -> Int {
                let raw = try unsigned(at: start + slot * referenceSize, size: referenceSize)
                guard raw < UInt64(objectCount) else { throw failure("object reference out of range") }
                return Int(raw)
            }
            if !isDictionary {
                var items: [Value] = []
                items.reserveCapacity(length)
                for slot in 0..<length { items.append(try object(try child(slot), depth: depth + 1, visiting: &visiting)) }
                return .array(items)
            }
            var members = [String: Value](minimumCapacity: length)
            for slot in 0..<length {
                guard case .string(let key) = try object(try child(slot), depth: depth + 1, visiting: &visiting) else {
                    throw failure("dictionary key is not a string")
                }
                members[key] = try object(try child(length + slot), depth: depth + 1, visiting: &visiting)
            }
            return .dictionary(members)
        default:
            throw failure(String(format: "unsupported object marker 0x%02x", marker))
        }
    }
}
