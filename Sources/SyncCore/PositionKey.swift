/// Position keys: strings over `[0-9A-Za-z]`, compared bytewise, such that a key can always be
/// made between any two others, so placing a record never renumbers the rest.
///
/// A key is an integer part and a fraction. The integer part's head byte gives its length
/// (`a`…`z`: 1…26 digits, non-negative side; `Z`…`A`: 1…26 digits, negative side), so appending
/// or prepending grows keys logarithmically. The fraction (no trailing `0`) splits the gap
/// between two keys whose integer parts are adjacent.
public enum PositionKey {
    static let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    static let base = digits.count

    /// Why no key could be made.
    public enum Failure: Error, Equatable {
        /// A bound is not a well-formed key, or `lower >= upper`.
        case invalidBounds
        /// The key space at that end is used up (after ~62^26 appends).
        case exhausted
    }

    /// The key of a first record in an empty collection.
    public static let initial = "a0"

    /// Keys longer than this are not handed out: the store re-keys a few neighbours instead
    /// (a crowded gap, e.g. many MOVEs BEFORE the same record, grows keys ~1 byte per 6 moves).
    public static let maxLength = 40

    /// How long the keys a re-key hands out may be: half the limit, so a re-keyed gap takes
    /// another ~120 moves before it is crowded again.
    public static let respacedLength = maxLength / 2

    /// `count` keys in ascending order strictly between `lower` and `upper` (nil: open), spread
    /// by bisection so that their length grows with log62 of the count past the bounds'.
    public static func spread(count: Int, between lower: String?, _ upper: String?) throws(Failure) -> [String] {
        var keys: [String] = []
        keys.reserveCapacity(count)
        try spread(count, lower, upper, into: &keys)
        return keys
    }

    private static func spread(_ count: Int, _ lower: String?, _ upper: String?, into keys: inout [String]) throws(Failure) {
        guard count > 0 else { return }
        let middle = try between(lower, upper)
        let below = (count - 1) / 2
        try spread(below, lower, middle, into: &keys)
        keys.append(middle)
        try spread(count - 1 - below, middle, upper, into: &keys)
    }

    /// A key strictly between `lower` and `upper`; nil means open on that side.
    public static func between(_ lower: String?, _ upper: String?) throws(Failure) -> String {
        let a = lower.map { Array($0.utf8) }
        let b = upper.map { Array($0.utf8) }
        if let a { try validate(a) }
        if let b { try validate(b) }
        if let a, let b, !(a.lexicographicallyPrecedes(b)) { throw .invalidBounds }
        return String(decoding: try keyBetween(a, b), as: UTF8.self)
    }

    /// Whether `key` is a well-formed position key.
    public static func isValid(_ key: String) -> Bool {
        (try? validate(Array(key.utf8))) != nil
    }

    private static func value(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: Int(byte - 0x30)
        case 0x41...0x5A: Int(byte - 0x41) + 10
        case 0x61...0x7A: Int(byte - 0x61) + 36
        default: nil
        }
    }

    private static func integerLength(head: UInt8) throws(Failure) -> Int {
        switch head {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): Int(head - UInt8(ascii: "a")) + 2
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): Int(UInt8(ascii: "Z") - head) + 2
        default: throw .invalidBounds
        }
    }

    private static func validate(_ key: [UInt8]) throws(Failure) {
        guard let head = key.first else { throw .invalidBounds }
        let length = try integerLength(head: head)
        guard key.count >= length, key.allSatisfy({ value($0) != nil }) else { throw .invalidBounds }
        // The smallest integer with no fraction has nothing below it; it is never handed out.
        if key == [UInt8(ascii: "A")] + Array(repeating: digits[0], count: 26) { throw .invalidBounds }
        if key.count > length, key.last == digits[0] { throw .invalidBounds }
    }

    private static func split(_ key: [UInt8]) throws(Failure) -> (integer: [UInt8], fraction: [UInt8]) {
        let length = try integerLength(head: key[0])
        return (Array(key[0..<length]), Array(key[length...]))
    }

    private static func keyBetween(_ a: [UInt8]?, _ b: [UInt8]?) throws(Failure) -> [UInt8] {
        switch (a, b) {
        case (nil, nil):
            return Array(initial.utf8)
        case (nil, let b?):
            let (integer, fraction) = try split(b)
            if !fraction.isEmpty { return integer }
            guard let smaller = decrement(integer) else { throw .exhausted }
            return smaller
        case (let a?, nil):
            let (integer, fraction) = try split(a)
            guard let larger = increment(integer) else {
                return integer + midpoint(fraction, nil)
            }
            return larger
        case (let a?, let b?):
            let (integerA, fractionA) = try split(a)
            let (integerB, fractionB) = try split(b)
            if integerA == integerB { return integerA + midpoint(fractionA, fractionB) }
            if let larger = increment(integerA), larger.lexicographicallyPrecedes(b) { return larger }
            return integerA + midpoint(fractionA, nil)
        }
    }

    /// A fraction strictly between `a` and `b` (nil: 1), neither ending in `0`.
    static func midpoint(_ a: [UInt8], _ b: [UInt8]?) -> [UInt8] {
        if let b {
            var common = 0
            while common < b.count, (common < a.count ? a[common] : digits[0]) == b[common] { common += 1 }
            if common > 0 {
                let restA = common < a.count ? Array(a[common...]) : []
                return Array(b[0..<common]) + midpoint(restA, Array(b[common...]))
            }
        }
        let digitA = a.first.flatMap(value) ?? 0
        let digitB = b.flatMap { $0.first.flatMap(value) } ?? base
        if digitB - digitA > 1 {
            return [digits[(digitA + digitB + 1) / 2]]
        }
        if let b, b.count > 1 { return [b[0]] }
        return [digits[digitA]] + midpoint(a.isEmpty ? [] : Array(a.dropFirst()), nil)
    }

    private static func increment(_ integer: [UInt8]) -> [UInt8]? {
        var head = integer[0]
        var body = Array(integer.dropFirst())
        var index = body.count - 1
        while index >= 0 {
            let next = value(body[index])! + 1
            if next < base {
                body[index] = digits[next]
                return [head] + body
            }
            body[index] = digits[0]
            index -= 1
        }
        if head == UInt8(ascii: "Z") { return Array("a0".utf8) }
        if head == UInt8(ascii: "z") { return nil }
        head += 1
        if head > UInt8(ascii: "a") { body.append(digits[0]) } else { body.removeLast() }
        return [head] + body
    }

    private static func decrement(_ integer: [UInt8]) -> [UInt8]? {
        var head = integer[0]
        var body = Array(integer.dropFirst())
        var index = body.count - 1
        while index >= 0 {
            let next = value(body[index])! - 1
            if next >= 0 {
                body[index] = digits[next]
                return head == UInt8(ascii: "A") && body.allSatisfy({ $0 == digits[0] }) ? nil : [head] + body
            }
            body[index] = digits[base - 1]
            index -= 1
        }
        if head == UInt8(ascii: "a") { return [UInt8(ascii: "Z"), digits[base - 1]] }
        if head == UInt8(ascii: "A") { return nil }
        head -= 1
        if head < UInt8(ascii: "Z") { body.append(digits[base - 1]) } else { body.removeLast() }
        return [head] + body
    }
}
