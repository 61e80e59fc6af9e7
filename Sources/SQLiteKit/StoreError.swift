/// Failures of SQLite storage itself (not of a request's rules, which are `ProtocolError`s).
public enum StoreError: Error, CustomStringConvertible, Sendable {
    /// SQLite refused an operation; the text is SQLite's own message.
    case sqlite(code: Int32, message: String)
    /// The folder for the database could not be prepared.
    case dataDirectory(String)
    /// The file was written by a newer PlistSync whose schema this one does not know.
    case schemaTooNew(Int)

    public var description: String {
        switch self {
        case .sqlite(let code, let message): "SQLite error \(code): \(message)"
        case .dataDirectory(let reason): "data folder: \(reason)"
        case .schemaTooNew(let version): "the store has schema version \(version), newer than this program knows"
        }
    }

    /// Whether the disk (or the file system's quota) was full: SQLITE_FULL, or an I/O error
    /// that SQLite saw as ENOSPC while writing the WAL.
    public var isDiskFull: Bool {
        guard case .sqlite(let code, let message) = self else { return false }
        return code & 0xFF == 13 || message.contains("disk is full") || message.contains("No space left")
    }
}
