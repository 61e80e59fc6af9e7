/// Binary plists built by hand from raw objects, for the reader's tests: object 0 is the top;
/// `offsetSize` and `referenceSize` any width the trailer can name (CPython's test helper
/// builds them the same way).
enum BinaryPlistBuilder {
    static func file(_ objects: [[UInt8]], offsetSize: Int = 2, referenceSize: Int = 1) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { bytes += bigEndian(UInt64(offset), size: offsetSize) }
        bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        return bytes + bigEndian(UInt64(objects.count), size: 8) + bigEndian(0, size: 8) + bigEndian(UInt64(table), size: 8)
    }

    /// `value` in its low `size` bytes, most significant first.
    static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> UInt64((size - 1 - $0) * 8)) }
    }
}
