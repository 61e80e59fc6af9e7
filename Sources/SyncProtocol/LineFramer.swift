import Foundation

/// Splits a byte stream into LF-terminated lines (a CR before the LF is dropped), refusing to
/// buffer a line longer than the limit.
public struct LineFramer: Sendable {
    /// The line in progress passed `maxLineBytes` before its LF arrived.
    public struct LineTooLong: Error, Equatable {}

    /// May be changed between lines (a connection gets the full limit once it has logged in).
    public var maxLineBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanned = 0

    public init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes received but not yet returned as a line.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Whether a whole line is waiting to be taken.
    public var hasCompleteLine: Bool { newline(from: scanned) != nil }

    /// The index of the first LF at or after `start` (memchr: the search is most of framing).
    private func newline(from start: Int) -> Int? {
        guard start < buffer.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress!)
            return memchr(base + start, 0x0A, bytes.count - start).map { UnsafeRawPointer($0) - base }
        }
    }

    /// Adds received bytes; call `nextLine()` until it returns nil afterwards.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete line without its terminator, or nil when none is complete yet.
    public mutating func nextLine() throws(LineTooLong) -> ArraySlice<UInt8>? {
        guard let index = newline(from: scanned) else {
            scanned = buffer.count
            if buffer.count - start > maxLineBytes { throw LineTooLong() }
            return nil
        }
        var end = index
        if end > start, buffer[end - 1] == 0x0D { end -= 1 }
        guard end - start <= maxLineBytes else { throw LineTooLong() }
        let line = buffer[start..<end]
        start = index + 1
        scanned = start
        return line
    }
}
