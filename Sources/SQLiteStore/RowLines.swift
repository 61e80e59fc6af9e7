import SQLiteKit
import SyncCore
import SyncProtocol

/// `* RECORD` and `* CHANGE` lines written straight from a row's bytes, as `ServerNotice` and
/// `Change.line` write them from values: a LIST or SUB replay page for a line connection costs
/// no value a record.
enum RowLines {
    private static let space = UInt8(ascii: " ")
    private static let newline = UInt8(ascii: "\n")

    /// `<id> <rev> <position> {fields}` or `<id> <rev> - DELETED`, and the LF.
    static func appendState(_ row: Row, id: Int32, rev: Int32, position: Int32, fields: Int32, to bytes: inout [UInt8]) {
        if row.text(id, first: EncodedLines.idIsAtom(first:), every: EncodedLines.idIsAtom(byte:)) {
            row.appendText(id, to: &bytes)
        } else {
            bytes.append(contentsOf: ResponseLine.argument(row.text(id) ?? "").utf8)
        }
        bytes.append(space)
        EncodedLines.appendNumber(row.integer(rev), to: &bytes)
        bytes.append(space)
        if row.isNull(fields) {
            bytes.append(contentsOf: EncodedLines.deleted)
        } else {
            row.appendText(position, to: &bytes)
            bytes.append(space)
            row.appendText(fields, to: &bytes)
        }
        bytes.append(newline)
    }

    /// A `* CHANGE <collection> <seq> ` line's start, `prefix` being `* CHANGE <collection> `.
    static func appendChangeStart(_ prefix: [UInt8], seq: Int64, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: prefix)
        EncodedLines.appendNumber(seq, to: &bytes)
        bytes.append(space)
    }
}
