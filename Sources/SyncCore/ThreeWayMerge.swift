import SyncProtocol

/// Merges a local and a remote version of a record's fields against their last common version.
///
/// Field by field: a field changed on one side only takes that side's value; a field changed on
/// both sides to different values keeps the remote (server's) value and is reported, so the
/// caller can save the local version as a conflict copy. A missing field counts as a value
/// ("absent"), so additions and removals merge the same way as edits. Values are compared by
/// `Value.isIdentical`, bit for bit, as the console's merge module compares them.
public enum ThreeWayMerge {
    /// The merged fields and the fields both sides changed differently.
    public struct Result: Equatable, Sendable {
        public var merged: Fields
        public var conflictingKeys: [String]

        public var hasConflicts: Bool { !conflictingKeys.isEmpty }
    }

    /// `base` nil means the two sides share no version (both created the same id): every field
    /// present on both sides with different values conflicts.
    public static func merge(base: Fields?, local: Fields, remote: Fields) -> Result {
        let base = base ?? [:]
        var merged: Fields = [:]
        var conflicts: [String] = []
        for key in Set(local.keys).union(remote.keys).sorted() {
            let original = base[key]
            let mine = local[key]
            let theirs = remote[key]
            let chosen: Value?
            // Compared bit for bit: -0.0 typed over 0.0, or a name retyped in the other Unicode
            // normalisation, is an edit (Swift's == would take it for the value that was there).
            if Value.identical(mine, theirs) || Value.identical(mine, original) {
                chosen = theirs
            } else if Value.identical(theirs, original) {
                chosen = mine
            } else {
                chosen = theirs
                conflicts.append(key)
            }
            if let chosen { merged[key] = chosen }
        }
        return Result(merged: merged, conflictingKeys: conflicts)
    }
}
