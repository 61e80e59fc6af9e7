/// Recognises a JSON object that is already exactly what `ValueJSON.encode` would write for
/// it, so a PUT's payload can be stored as it came instead of decoded and encoded again.
///
/// Only the common shapes are recognised: strings with no escapes, integers, booleans, arrays,
/// and objects with ASCII keys not starting with `$`, in ascending order, no white space, within
/// `ValueJSON.maxDepth`. Anything else (reals, dates, data, escapes, spacing, key order)
/// answers nil and takes the decode-and-encode path, which is always correct.
enum CanonicalJSON {
    /// The index just past the canonical object starting at `start`, or nil.
    static func objectEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer, index: start)
            return scanner.object(depth: 0) ? scanner.index : nil
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index: Int

        mutating func value(depth: Int) -> Bool {
            guard depth < ValueJSON.maxDepth, index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string(asciiKey: false) != nil
            case UInt8(ascii: "t"): return word("true")
            case UInt8(ascii: "f"): return word("false")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return integer()
            default: return false
            }
        }

        mutating func object(depth: Int) -> Bool {
            guard depth < ValueJSON.maxDepth, index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return false }
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return true
            }
            var previousKey: Range<Int>?
            while true {
                guard let key = string(asciiKey: true), key.count > 0, bytes[key.lowerBound] != UInt8(ascii: "$") else { return false }
                if let previousKey, !isAscending(previousKey, key) { return false }
                previousKey = key
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                index += 1
                guard value(depth: depth + 1), index < bytes.count else { return false }
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "}") { return true }
                guard byte == UInt8(ascii: ",") else { return false }
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                guard value(depth: depth + 1), index < bytes.count else { return false }
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "]") { return true }
                guard byte == UInt8(ascii: ",") else { return false }
            }
        }

        /// A string with nothing to escape; returns the range of its contents.
        mutating func string(asciiKey: Bool) -> Range<Int>? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index + 1
            var end = start
            var ascii = true
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\"") { break }
                if byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "\\") { return nil }
                if byte >= 0x80 { ascii = false }
                end += 1
            }
            guard end < bytes.count else { return nil }
            if !ascii {
                guard !asciiKey, String(validating: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) != nil else { return nil }
            }
            index = end + 1
            return start..<end
        }

        /// `0` or `-?[1-9][0-9]{0,17}`: always in Int64's range and written back the same.
        mutating func integer() -> Bool {
            var cursor = index
            if bytes[cursor] == UInt8(ascii: "-") { cursor += 1 }
            let digitsStart = cursor
            while cursor < bytes.count, bytes[cursor] >= 0x30, bytes[cursor] <= 0x39 { cursor += 1 }
            let digits = cursor - digitsStart
            guard digits >= 1, digits <= 18, cursor < bytes.count else { return false }
            if bytes[digitsStart] == UInt8(ascii: "0") {
                guard digits == 1, digitsStart == index else { return false }  // no leading zero, no -0
            }
            // A fraction or exponent makes it a real: not recognised here.
            let next = bytes[cursor]
            guard next != UInt8(ascii: "."), next != UInt8(ascii: "e"), next != UInt8(ascii: "E") else { return false }
            index = cursor
            return true
        }

        mutating func word(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// ASCII keys: byte order is `String`'s order; equal keys are not ascending.
        func isAscending(_ first: Range<Int>, _ second: Range<Int>) -> Bool {
            var a = first.lowerBound
            var b = second.lowerBound
            while a < first.upperBound, b < second.upperBound {
                if bytes[a] != bytes[b] { return bytes[a] < bytes[b] }
                a += 1
                b += 1
            }
            return first.count < second.count
        }
    }
}
