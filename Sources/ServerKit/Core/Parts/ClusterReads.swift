/// With a store shared by several nodes: which catch-up reads are under way (the change log
/// for the feed's gaps, the store's latest seq), so each runs one at a time.
final class ClusterReads {
    private var readingChangeLog = false
    private var readingCurrentSeq = false

    /// True when a change-log read may start now (none runs); `changeLogRead` ends it.
    func claimChangeLogRead() -> Bool {
        guard !readingChangeLog else { return false }
        readingChangeLog = true
        return true
    }

    func changeLogRead() {
        readingChangeLog = false
    }

    /// True when a read of the latest seq may start now (none runs); `currentSeqRead` ends it.
    func claimCurrentSeqRead() -> Bool {
        guard !readingCurrentSeq else { return false }
        readingCurrentSeq = true
        return true
    }

    func currentSeqRead() {
        readingCurrentSeq = false
    }
}
