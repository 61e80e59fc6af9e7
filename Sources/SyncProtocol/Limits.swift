/// Bounds the server enforces on what one client may send or make it hold.
///
/// Each is checked before more bytes are buffered; breaking one is a named protocol error.
public struct Limits: Sendable, Equatable {
    /// Longest request line; longer closes the connection with `* BYE TOO_LARGE`, since the
    /// rest of the line cannot be skipped safely without buffering it (redis' query buffer limit).
    public var maxLineBytes: Int
    /// Largest encoded record fields; larger is `ERR TOO_LARGE` and the connection lives on.
    public var maxRecordBytes: Int
    /// Unsent output a subscriber may hold before it is dropped with `* BYE SLOW`.
    public var maxPendingOutputBytes: Int

    /// The defaults of the wire contract (DESIGN.md §3).
    public static let standard = Limits(
        maxLineBytes: 1 << 20, maxRecordBytes: 256 << 10, maxPendingOutputBytes: 8 << 20)

    public init(maxLineBytes: Int, maxRecordBytes: Int, maxPendingOutputBytes: Int) {
        self.maxLineBytes = maxLineBytes
        self.maxRecordBytes = maxRecordBytes
        self.maxPendingOutputBytes = maxPendingOutputBytes
    }
}
