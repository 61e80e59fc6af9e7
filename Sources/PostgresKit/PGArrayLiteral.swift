/// Text of a PostgreSQL array literal (`{"a","b",NULL}`), so a whole column of values goes to
/// the server as one parameter (`unnest($1::text[])`) instead of one statement a row.
public enum PGArrayLiteral {
    public static func text(_ values: [String?]) -> String {
        var literal = "{"
        literal.reserveCapacity(values.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { literal += "," }
            guard let value else {
                literal += "NULL"
                continue
            }
            literal += "\""
            if value.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                for character in value.unicodeScalars {
                    if character == "\"" || character == "\\" { literal += "\\" }
                    literal.unicodeScalars.append(character)
                }
            } else {
                literal += value
            }
            literal += "\""
        }
        return literal + "}"
    }

    public static func integers(_ values: [Int64]) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }

    public static func optionalIntegers(_ values: [Int64?]) -> String {
        "{" + values.map { $0.map(String.init) ?? "NULL" }.joined(separator: ",") + "}"
    }
}
