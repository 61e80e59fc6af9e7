import Foundation

extension Value {
    /// Whether two values are the same down to their bits: strings and keys by their UTF-8
    /// bytes, reals and dates by their Doubles' bit patterns (so -0.0 is not 0.0, and a NaN is
    /// itself). `==` is Swift's: it takes a string and its twin in the other Unicode
    /// normalisation for equal, and 0.0 for -0.0. Merges decide "changed" by this, so nothing a
    /// person typed is taken for what was there (DESIGN.md §5: values come back bit-identical).
    public func isIdentical(to other: Value) -> Bool {
        switch (self, other) {
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.integer(let a), .integer(let b)): return a == b
        case (.largeInteger(let a), .largeInteger(let b)): return a == b
        case (.real(let a), .real(let b)): return a.bitPattern == b.bitPattern
        case (.bool(let a), .bool(let b)): return a == b
        case (.date(let a), .date(let b)): return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.data(let a), .data(let b)): return a == b
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.dictionary(let a), .dictionary(let b)): return Value.fields(a, areIdenticalTo: b)
        default: return false
        }
    }

    /// `isIdentical` for two dictionaries: the same keys, byte for byte, with identical values.
    public static func fields(_ a: Fields, areIdenticalTo b: Fields) -> Bool {
        guard a.count == b.count else { return false }
        for (key, value) in a {
            // A key's twin in the other normalisation finds this entry: its stored key must match too.
            guard let index = b.index(forKey: key), b[index].key.utf8.elementsEqual(key.utf8), value.isIdentical(to: b[index].value) else { return false }
        }
        return true
    }

    /// `isIdentical` for optional values: both absent, or both present and identical.
    public static func identical(_ a: Value?, _ b: Value?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a.isIdentical(to: b)
        default: false
        }
    }
}
