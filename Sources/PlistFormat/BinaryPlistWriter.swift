import Foundation
import SyncProtocol

/// Writes `bplist00` files: objects, an offset table, and the 32-byte trailer.
enum BinaryPlistWriter {
    static func encode(_ value: Value) -> [UInt8] {
        var objects: [Value] = []
        var children: [[Int]] = []
        flatten(value, into: &objects, children: &children)
        let referenceSize = byteCount(for: UInt64(objects.count))

        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(out.count)
            write(object, children: children[index], referenceSize: referenceSize, into: &out)
        }
        let tableOffset = out.count
        let offsetSize = byteCount(for: UInt64(tableOffset))
        for offset in offsets { append(UInt64(offset), size: offsetSize, to: &out) }
        out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        append(UInt64(objects.count), size: 8, to: &out)
        append(0, size: 8, to: &out)
        append(UInt64(tableOffset), size: 8, to: &out)
        return out
    }

    /// Numbers objects depth-first; a container's children are listed by object number.
    private static func flatten(_ value: Value, into objects: inout [Value], children: inout [[Int]]) {
        let index = objects.count
        objects.append(value)
        children.append([])
        switch value {
        case .array(let items):
            var references: [Int] = []
            for item in items {
                references.append(objects.count)
                flatten(item, into: &objects, children: &children)
            }
            children[index] = references
        case .dictionary(let members) where PlistFile.uid(in: members) == nil:
            let keys = members.keys.sorted()
            var keyReferences: [Int] = []
            var valueReferences: [Int] = []
            for key in keys {
                keyReferences.append(objects.count)
                flatten(.string(key), into: &objects, children: &children)
            }
            for key in keys {
                valueReferences.append(objects.count)
                flatten(members[key]!, into: &objects, children: &children)
            }
            children[index] = keyReferences + valueReferences
        default:
            break
        }
    }

    private static func write(_ value: Value, children: [Int], referenceSize: Int, into out: inout [UInt8]) {
        switch value {
        case .bool(let flag):
            out.append(flag ? 0x09 : 0x08)
        case .integer(let integer):
            writeInteger(integer, into: &out)
        case .real(let real):
            out.append(0x23)
            append(real.bitPattern, size: 8, to: &out)
        case .date(let date):
            out.append(0x33)
            append((date.timeIntervalSince1970 - BinaryPlistReader.epochOffset).bitPattern, size: 8, to: &out)
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
        case .array:
            writeMarker(0xA, count: children.count, into: &out)
            for child in children { append(UInt64(child), size: referenceSize, to: &out) }
        case .dictionary(let members):
            if let uid = PlistFile.uid(in: members) {
                let size = byteCount(for: uid)
                out.append(0x80 | UInt8(size - 1))
                append(uid, size: size, to: &out)
                return
            }
            writeMarker(0xD, count: children.count / 2, into: &out)
            for child in children { append(UInt64(child), size: referenceSize, to: &out) }
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
