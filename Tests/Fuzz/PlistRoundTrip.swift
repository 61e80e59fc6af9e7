// Shared by the plist harnesses: decode any bytes; if they decode, every integer in the value
// must be one the file spells (never a wrapped or rounded one), and the written form must be a
// fixed point of write ∘ read in the same format.
func plistRoundTrip(_ bytes: [UInt8], as format: PlistFile.Format) -> CInt {
    guard let (value, _) = try? PlistFile.decode(bytes) else { return 0 }
    if let spelled = IntegersInFile.all(bytes) { checkIntegers(in: value, areAmong: spelled) }
    let written = PlistFile.encode(value, as: format)
    guard let (again, _) = try? PlistFile.decode(written) else {
        preconditionFailure("a written \(format) plist does not read back")
    }
    precondition(PlistFile.encode(again, as: format) == written, "\(format) plist round trip is not a fixed point")
    return 0
}

private func checkIntegers(in value: Value, areAmong spelled: Set<Int128>) {
    switch value {
    case .integer(let integer):
        precondition(spelled.contains(Int128(integer)), "the reader returned the integer \(integer), which the file does not hold")
    case .largeInteger(let integer):
        precondition(spelled.contains(Int128(integer.value)), "the reader returned the integer \(integer), which the file does not hold")
    case .array(let items):
        for item in items { checkIntegers(in: item, areAmong: spelled) }
    case .dictionary(let members):
        for member in members.values { checkIntegers(in: member, areAmong: spelled) }
    default:
        break
    }
}

/// An oracle independent of the readers: every integer (and UID) a plist file spells, in 128
/// bits, found by scanning the bytes; nil when it cannot be sure (text with entities, CDATA or
/// comments inside an integer, UTF-16 text, a table it cannot follow).
enum IntegersInFile {
    static func all(_ bytes: [UInt8]) -> Set<Int128>? {
        bytes.starts(with: Array("bplist00".utf8)) ? binary(bytes) : xml(bytes)
    }

    private static func number(_ bytes: [UInt8], _ start: Int, _ count: Int) -> UInt64? {
        guard start >= 0, count <= 8, start + count <= bytes.count else { return nil }
        return bytes[start..<(start + count)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// Every integer and UID object the offset table points at.
    private static func binary(_ bytes: [UInt8]) -> Set<Int128>? {
        guard bytes.count >= 40 else { return nil }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        guard (1...8).contains(offsetSize), let count = number(bytes, trailer + 8, 8), let table = number(bytes, trailer + 24, 8),
            count < UInt64(bytes.count), table < UInt64(bytes.count)
        else { return nil }
        var spelled: Set<Int128> = []
        for object in 0..<Int(count) {
            guard let offset = number(bytes, Int(table) + object * offsetSize, offsetSize), offset < UInt64(bytes.count) else { return nil }
            let position = Int(offset)
            let marker = bytes[position]
            let nibble = Int(marker & 0x0F)
            switch marker >> 4 {
            case 0x1 where nibble <= 3:
                guard let raw = number(bytes, position + 1, 1 << nibble) else { continue }
                spelled.insert(nibble == 3 ? Int128(Int64(bitPattern: raw)) : Int128(raw))
            case 0x1 where nibble == 4:
                guard let high = number(bytes, position + 1, 8), let low = number(bytes, position + 9, 8) else { continue }
                spelled.insert(Int128(Int64(bitPattern: high)) << 64 | Int128(low))
            case 0x8 where nibble < 8:
                if let uid = number(bytes, position + 1, nibble + 1) { spelled.insert(Int128(uid)) }
            default:
                continue
            }
        }
        return spelled
    }

    /// The text of every `<integer>` element, decimal or 0x hexadecimal.
    private static func xml(_ bytes: [UInt8]) -> Set<Int128>? {
        guard !bytes.contains(0), !bytes.starts(with: [0xFE]), !bytes.starts(with: [0xFF]) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // `<integer >` and the like: the reader takes them, this scan would not see them.
        guard text.components(separatedBy: "<integer").count == text.components(separatedBy: "<integer>").count else { return nil }
        var spelled: Set<Int128> = []
        for piece in text.components(separatedBy: "<integer>").dropFirst() {
            // An end tag may hold white space before its `>` (`</integer\n>`), as XML allows.
            guard let end = piece.range(of: "</integer") else { continue }
            let inner = piece[..<end.lowerBound]
            if inner.contains("&") || inner.contains("<") { return nil }
            let trimmed = inner.trimmingCharacters(in: .whitespacesAndNewlines)
            if let decimal = Int128(trimmed) {
                spelled.insert(decimal)
            } else if trimmed.lowercased().hasPrefix("0x"), let hex = Int128(trimmed.dropFirst(2), radix: 16) {
                spelled.insert(hex)
            }
        }
        return spelled
    }
}
