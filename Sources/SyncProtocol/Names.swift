/// Rules for the names users choose: collections, record ids and user names (DESIGN.md §2).
public enum Names {
    /// Whether `text` is exactly `length` lowercase hex digits (token and invitation ids,
    /// secrets, fingerprints).
    public static func isLowercaseHex<Text: StringProtocol>(_ text: Text, length: Int) -> Bool {
        text.utf8.count == length && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`: safe as a folder name on every platform.
    public static func isValidCollection(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...64).contains(bytes.count), let first = bytes.first, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// Any UTF-8 file stem of 1–200 bytes with no `/`, NUL or control character, not `.`/`..`,
    /// not hidden, and not a conflict-copy name.
    public static func isValidRecordID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard (1...200).contains(bytes.count), bytes.first != UInt8(ascii: ".") else { return false }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") }) else { return false }
        return !contains(bytes, conflictMarker)
    }

    private static let conflictMarker = Array(".sync-conflict-".utf8)

    /// The companion collection of `collection` that holds its conflict copies, so every
    /// mirror sees them: `<collection>~conflicts` (`~` is not allowed in collection names, so it
    /// never clashes with one). It exists with its collection and shares its members.
    public static func conflictsCollection(of collection: String) -> String {
        collection + conflictsSuffix
    }

    public static let conflictsSuffix = "~conflicts"

    /// The collection whose conflict copies `name` holds, when `name` is a companion.
    public static func collection(ofConflicts name: String) -> String? {
        guard isConflictsName(name) else { return nil }
        let base = String(name.dropLast(conflictsSuffix.count))
        return isValidCollection(base) ? base : nil
    }

    /// The id of a conflict copy: its file stem `<id>.sync-conflict-<stamp>-<device>`, at most
    /// 249 bytes (a 255-byte file name with `.plist`), otherwise the record-id rules.
    public static func isValidConflictCopyID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard (1...249).contains(bytes.count), bytes.first != UInt8(ascii: ".") else { return false }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") }) else { return false }
        return contains(bytes, conflictMarker)
    }

    /// The id rule of a collection or of a conflicts companion.
    public static func isValidID(_ id: String, in collection: String) -> Bool {
        isConflictsName(collection) ? isValidConflictCopyID(id) : isValidRecordID(id)
    }

    /// Whether `name` ends in `conflictsSuffix`, by its bytes (every access check asks: a
    /// `String.hasSuffix` compares characters).
    private static func isConflictsName(_ name: String) -> Bool {
        let bytes = name.utf8
        let suffix = conflictsSuffix.utf8
        guard bytes.count > suffix.count else { return false }
        return bytes.reversed().starts(with: suffix.reversed())
    }

    /// Whether `part` occurs in `bytes` (read where they are: no copy of an id a check).
    private static func contains(_ bytes: String.UTF8View, _ part: [UInt8]) -> Bool {
        var rest = bytes[...]
        while let start = rest.firstIndex(of: part[0]) {
            let candidate = rest[start...]
            if candidate.starts(with: part) { return true }
            rest = candidate.dropFirst()
        }
        return false
    }

    /// User names follow the collection-name rule, so they are safe in paths and logs too;
    /// `token` (any case) is reserved, since `AUTH TOKEN <token>` is the token login.
    public static func isValidUser(_ name: String) -> Bool {
        isValidCollection(name) && !isReservedUser(name)
    }

    /// Names no account may take: `AUTH <name> …` would not reach a password login.
    public static func isReservedUser(_ name: String) -> Bool {
        name.lowercased() == "token"
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
