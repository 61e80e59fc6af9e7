/// The store's room on disk: its size (read off the loop every 5 s at most, for STATS and
/// metrics) and disk-full mode, entered when a commit fails for lack of space (the reserve
/// file is given back, and only DEL is let through until the disk has room again).
final class StoreSpace {
    private(set) var bytes: Int64
    private var nextReadAt: UInt64 = 0
    private(set) var isDiskFull = false

    static let readIntervalMilliseconds: UInt64 = 5_000

    init(bytes: Int64) {
        self.bytes = bytes
    }

    /// Whether the size is due to be read; if so the next read is due an interval from now.
    func claimSizeRead(now: UInt64) -> Bool {
        guard now >= nextReadAt else { return false }
        nextReadAt = now + Self.readIntervalMilliseconds
        return true
    }

    func sizeRead(_ bytes: Int64) {
        self.bytes = bytes
    }

    /// A commit failed for lack of space: true when the mode is entered now.
    func diskFilled() -> Bool {
        guard !isDiskFull else { return false }
        isDiskFull = true
        return true
    }

    func roomAgain() {
        isDiskFull = false
    }
}
