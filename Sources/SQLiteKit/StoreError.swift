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
}
