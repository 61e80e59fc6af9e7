import Foundation
import SyncProtocol

/// Every value the simulated people typed (unique in the run), and which of them someone
/// replaced while looking at it: the ledger the lost-value check reads. A value is known by its
/// token: text as it is, other kinds by kind and exact value (`token(of:)`).
final class TypedValues {
    private var counter = 0
    /// Every value typed (its token), with where (for the report).
    private(set) var typed: [String: String] = [:]
    /// Values someone replaced or deleted while looking at them.
    private(set) var replacedOnPurpose: Set<String> = []

    /// The kinds of value people type.
    enum Kind {
        case text, integer, real, date, data

        /// What people type, as often as they type it: text three times in seven.
        static let mix: [Kind] = [.text, .text, .text, .integer, .real, .date, .data]
    }

    /// A new text value, typed at `place`.
    func new(_ place: String) -> String {
        counter += 1
        let value = "v\(counter)"
        typed[value] = place
        return value
    }

    /// A new value of `kind`, typed at `place`: an integer past 2^53 (a double would round it),
    /// a real with no short binary form, a date in whole seconds (XML plists keep no more),
    /// bytes that are not text.
    func newValue(kind: Kind, _ place: String) -> Value {
        counter += 1
        let value: Value = switch kind {
        case .text: .string("v\(counter)")
        case .integer: .integer((1 << 60) + Int64(counter))
        case .real: .real(Double(counter) + 0.1)
        case .date: .date(Date(timeIntervalSinceReferenceDate: 800_000_000 + Double(counter)))
        case .data: .data(Data([0x00, 0xFF]) + Data("v\(counter)".utf8))
        }
        typed[Self.token(of: value)!] = place
        return value
    }

    /// How a typed value is known in the ledger; nil for kinds nobody types.
    static func token(of value: Value) -> String? {
        switch value {
        case .string(let text): text
        case .integer(let number): "integer \(number)"
        case .real(let number): "real \(number.bitPattern)"
        case .date(let date): "date \(date.timeIntervalSinceReferenceDate.bitPattern)"
        case .data(let bytes): "data " + bytes.map { String($0, radix: 16) }.joined(separator: ".")
        default: nil
        }
    }

    func replaced(_ value: String) {
        replacedOnPurpose.insert(value)
    }

    func replaced(_ value: Value) {
        if let token = Self.token(of: value) { replacedOnPurpose.insert(token) }
    }

    /// The save with this value failed and the person was told: it does not count as typed.
    func unsaved(_ value: String) {
        typed[value] = nil
    }

    func unsaved(_ value: Value) {
        if let token = Self.token(of: value) { typed[token] = nil }
    }

    /// Documents an app is writing in place (half written on disk), by the bytes of their
    /// path (two names that differ only in Unicode normalisation are two documents, though
    /// Swift compares them equal): until the save ends, what they hold is in the app's hands.
    private(set) var savesUnderWay: [[UInt8]: [UInt8]] = [:]

    func saveStarted(_ path: String, _ bytes: [UInt8]) {
        savesUnderWay[Array(path.utf8)] = bytes
    }

    func saveEnded(_ path: String) {
        savesUnderWay[Array(path.utf8)] = nil
    }
}
