/// Bytes made once and sent to many connections without a copy for each (a broadcast's change
/// lines, its event-stream chunk): a connection queues a reference, and the kernel reads them
/// from here. Immutable once made, so any thread may hold it; freed when the last write that
/// uses it is done.
public final class SharedBytes: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    public let count: Int

    /// One copy of contiguous bytes (no per-byte work).
    public convenience init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    /// One copy of contiguous bytes (no per-byte work).
    public init(_ bytes: ArraySlice<UInt8>) {
        count = bytes.count
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        bytes.withUnsafeBytes { raw in
            if let source = raw.baseAddress { base.copyMemory(from: source, byteCount: raw.count) }
        }
    }

    /// A string's UTF-8 bytes.
    public convenience init(_ text: String) {
        self.init(Array(text.utf8))
    }

    deinit { base.deallocate() }

    /// The bytes at `range`, copied out (for a layer that must transform them, as TLS does).
    public subscript(range: Range<Int>) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count))
    }
}
