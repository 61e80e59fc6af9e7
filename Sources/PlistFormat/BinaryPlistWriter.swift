import Foundation
import SyncProtocol

/// Writes `bplist00` files: objects, an offset table, and the 32-byte trailer. Equal strings,
/// numbers, dates and data are written once and shared, as Foundation's writer does (a list of
/// a thousand records names its keys three times, not three thousand).
enum BinaryPlistWriter {
    static func encode(_ value: Value) -> [UInt8] {
        var objects = ObjectTable()
        let top = objects.add(value)
        return objects.encoded(top: top)
    }

    /// One object of the file: a scalar, a UID, or a container whose children's object numbers
    /// are a range of `ObjectTable.references` (a dictionary's keys first, then its values).
    private enum Entry {
        case scalar(Value)
        case uid(UInt64)
        case array(Range<Int>)
        case dictionary(Range<Int>)
    }

    /// The objects of one file, numbered as they are added (children before their container),
    /// equal scalars shared. Writers of structured formats (keyed archives) add their objects
    /// directly instead of building a `Value` tree first.
    struct ObjectTable {
        private var entries: [Entry] = []
        private var references: [Int] = []
        private var shared: [Value: Int] = [:]
        /// Strings by their bytes: `Value` equality takes two spellings of the same text (Unicode
        /// normalisation) for one, and sharing them would write one spelling for both.
        private var sharedStrings: [[UInt8]: Int] = [:]
        private var sharedUIDs: [UInt64: Int] = [:]

        /// A value and everything in it; its object number.
        mutating func add(_ value: Value) -> Int {
            switch value {
            case .array(let items):
                return array(items.map { add($0) })
            case .dictionary(let members):
                if let uid = PlistFile.uid(in: members) { return self.uid(uid) }
                let sorted = members.sorted { $0.key < $1.key }
                let keys = sorted.map { add(.string($0.key)) }
                return dictionary(keys: keys, values: sorted.map { add($0.value) })
            case .real(let real) where real == 0:
                // 0.0 == -0.0: each zero keeps its own sign.
                return append(.scalar(value))
            case .string(let text):
                let bytes = Array(text.utf8)
                if let index = sharedStrings[bytes] { return index }
                let index = append(.scalar(value))
                sharedStrings[bytes] = index
                return index
            default:
                if let index = shared[value] { return index }
                let index = append(.scalar(value))
                shared[value] = index
                return index
            }
        }

        mutating func uid(_ uid: UInt64) -> Int {
            if let index = sharedUIDs[uid] { return index }
            let index = append(.uid(uid))
            sharedUIDs[uid] = index
            return index
        }

        /// An array of objects already added.
        mutating func array(_ items: [Int]) -> Int {
            let start = references.count
            references += items
            return append(.array(start..<references.count))
        }

        /// A dictionary of objects already added (`keys` are string objects).
        mutating func dictionary(keys: [Int], values: [Int]) -> Int {
            let start = references.count
            references += keys
            references += values
            return append(.dictionary(start..<references.count))
        }

        private mutating func append(_ entry: Entry) -> Int {
            entries.append(entry)
            return entries.count - 1
        }

        /// The file, `top` its root object.
        func encoded(top: Int) -> [UInt8] {
            let referenceSize = byteCount(for: UInt64(entries.count))
            var out = Array("bplist00".utf8)
            out.reserveCapacity(entries.count * 8 + 64)
            var offsets: [Int] = []
            offsets.reserveCapacity(entries.count)
            for entry in entries {
                offsets.append(out.count)
                write(entry, references: references, referenceSize: referenceSize, into: &out)
            }
            let tableOffset = out.count
            let offsetSize = byteCount(for: UInt64(tableOffset))
            for offset in offsets { BinaryPlistWriter.append(UInt64(offset), size: offsetSize, to: &out) }
            out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
            BinaryPlistWriter.append(UInt64(entries.count), size: 8, to: &out)
            BinaryPlistWriter.append(UInt64(top), size: 8, to: &out)
            BinaryPlistWriter.append(UInt64(tableOffset), size: 8, to: &out)
            return out
        }
    }

    private static func write(_ entry: Entry, references: [Int], referenceSize: Int, into out: inout [UInt8]) {
        switch entry {
        case .uid(let uid):
            let size = byteCount(for: uid)
            out.append(0x80 | UInt8(size - 1))
            append(uid, size: size, to: &out)
        case .array(let slots):
            writeMarker(0xA, count: slots.count, into: &out)
            for slot in slots { append(UInt64(references[slot]), size: referenceSize, to: &out) }
        case .dictionary(let slots):
            writeMarker(0xD, count: slots.count / 2, into: &out)
            for slot in slots { append(UInt64(references[slot]), size: referenceSize, to: &out) }
        case .scalar(let value):
            writeScalar(value, into: &out)
        }
    }

    private static func writeScalar(_ value: Value, into out: inout [UInt8]) {
        switch value {
        case .bool(let flag):
            out.append(flag ? 0x09 : 0x08)
        case .integer(let integer):
            writeInteger(integer, into: &out)
        case .largeInteger(let integer):
            // Above Int64: a 16-byte integer, its high half zero (as CoreFoundation writes it).
            out.append(0x14)
            append(0, size: 8, to: &out)
            append(integer.value, size: 8, to: &out)
        case .real(let real):
            out.append(0x23)
            append(real.bitPattern, size: 8, to: &out)
        case .date(let date):
            out.append(0x33)
            var seconds = date.timeIntervalSinceReferenceDate
            #if SIMULATION_MUTATIONS
            if Mutation.active == .binaryDatesFrom1970 { seconds = date.timeIntervalSince1970 }
            #endif
            append(seconds.bitPattern, size: 8, to: &out)
        case .data(let data):
            writeMarker(0x4, count: data.count, into: &out)
            out += data
        case .string(let text):
            if text.utf8.allSatisfy({ $0 < 0x80 }) {
                writeMarker(0x5, count: text.utf8.count, into: &out)
                out += text.utf8
            } else {
                let units = Array(text.utf16)
                writeMarker(0x6, count: units.count, into: &out)
                for unit in units { out += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
            }
        case .array, .dictionary:
            preconditionFailure("containers are written as entries")
        }
    }

    private static func writeInteger(_ integer: Int64, into out: inout [UInt8]) {
        if integer < 0 || integer > Int64(UInt32.max) {
            out.append(0x13)
            append(UInt64(bitPattern: integer), size: 8, to: &out)
        } else {
            let size = byteCount(for: UInt64(integer))
            out.append(0x10 | UInt8(size.trailingZeroBitCount))
            append(UInt64(integer), size: size, to: &out)
        }
    }

    private static func writeMarker(_ kind: UInt8, count: Int, into out: inout [UInt8]) {
        if count < 15 {
            out.append(kind << 4 | UInt8(count))
        } else {
            out.append(kind << 4 | 0x0F)
            writeInteger(Int64(count), into: &out)
        }
    }

    /// 1, 2, 4 or 8: the bytes needed for `value`.
    private static func byteCount(for value: UInt64) -> Int {
        if value <= 0xFF { return 1 }
        if value <= 0xFFFF { return 2 }
        if value <= 0xFFFF_FFFF { return 4 }
        return 8
    }

    private static func append(_ value: UInt64, size: Int, to out: inout [UInt8]) {
        for shift in stride(from: (size - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}
