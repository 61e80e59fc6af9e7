/// A failure reported by PostgreSQL or by libpq (a lost connection, a refused login).
public struct PGError: Error, CustomStringConvertible, Sendable {
    /// The five-character SQLSTATE when the server sent one (`23505` unique violation, …).
    public let sqlState: String?
    public let message: String
    /// Whether the connection itself is gone (the server stopped, the network failed).
    public let connectionLost: Bool

    public init(sqlState: String?, message: String, connectionLost: Bool = false) {
        self.sqlState = sqlState
        self.message = message
        self.connectionLost = connectionLost
    }

    public var description: String {
        sqlState.map { "PostgreSQL error \($0): \(message)" } ?? "PostgreSQL: \(message)"
    }

    /// The server's disk (or a quota) is full: class 53 "insufficient resources", 53100.
    public var isDiskFull: Bool { sqlState == "53100" }
}
