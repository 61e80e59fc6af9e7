import CLibPQ
import Glibc

/// One libpq connection with a cache of prepared statements: the small wrapper through which
/// the PostgreSQL store talks to its server. Parameters and results travel as text.
///
/// Not thread-safe: one thread at a time uses a connection (the loop thread, or the single
/// in-flight commit on the thread pool), which is why it is `@unchecked Sendable`.
public final class PGConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private let pq: LibPQ
    private var prepared: [String: String] = [:]
    public let url: String
    /// Statements run after every connect (session settings).
    private let setup: String

    /// Seconds a connect waits for the database unless the URL says otherwise
    /// (`?connect_timeout=N`): libpq alone waits for ever on a host that accepts the connection
    /// and never answers.
    public static let defaultConnectTimeoutSeconds = 10
    /// Seconds a statement may run unless the URL says otherwise.
    public static let defaultStatementTimeoutSeconds = 10

    /// Connects to `url` (`postgresql://user@host:port/db`, or libpq's `key=value` form) and
    /// runs `settings` (`SET …` statements), again after each reconnect.
    public init(url: String, settings: [String] = []) throws(PGError) {
        self.url = url
        let pq = try LibPQ.get()
        self.pq = pq
        // Notices ("relation … already exists, skipping") are not for the server's log.
        // A statement the database cannot finish in time (a lock held by a stuck node, a plan
        // gone wrong) ends, so the thread that waits for it is freed; the URL may say otherwise
        // (`?options=-c%20statement_timeout%3D30s`).
        let timeout = url.contains("statement_timeout") ? [] : ["SET statement_timeout = '\(Self.defaultStatementTimeoutSeconds)s'"]
        setup = (["SET client_min_messages TO warning"] + timeout + settings).joined(separator: "; ")
        // The default comes first: what the URL says, expanded from `dbname`, overrides it.
        let keywords = ["connect_timeout", "dbname"]
        let values = [String(Self.defaultConnectTimeoutSeconds), url]
        let connected = Self.withCStrings(keywords) { keywordArray in
            Self.withCStrings(values) { valueArray in pq.connectdbParams(keywordArray, valueArray, 1) }
        }
        guard let connection = connected else { throw PGError(sqlState: nil, message: "out of memory", connectionLost: true) }
        guard pq.status(connection) == CONNECTION_OK else {
            let message = Self.trimmed(pq.errorMessage(connection))
            pq.finish(connection)
            throw PGError(sqlState: nil, message: message, connectionLost: true)
        }
        handle = connection
        try script(setup)
    }

    deinit { pq.finish(handle) }

    /// The socket, for waiting on notifications with the event loop.
    public var socket: Int32 { pq.socket(handle) }

    /// Whether the connection is gone (then `reconnect()` before the next query).
    public var isBroken: Bool { pq.status(handle) != CONNECTION_OK }

    /// Connects again with the same settings; prepared statements start afresh.
    public func reconnect() throws(PGError) {
        prepared.removeAll()
        pq.reset(handle)
        guard pq.status(handle) == CONNECTION_OK else { throw PGError(sqlState: nil, message: Self.trimmed(pq.errorMessage(handle)), connectionLost: true) }
        try script(setup)
    }

    /// Runs statements separated by `;` that take no parameters; the rows of the last one.
    @discardableResult
    public func script(_ sql: String) throws(PGError) -> PGRows {
        try rows(of: pq.exec(handle, sql))
    }

    /// Runs one statement with `$1…` parameters (nil is NULL), prepared once per connection.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws(PGError) -> PGRows {
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            _ = try rows(of: pq.prepare(handle, name, sql, Int32(parameters.count), nil))
            prepared[sql] = name
        }
        let result = Self.withCStrings(parameters) { values in pq.execPrepared(handle, name, Int32(parameters.count), values, nil, nil, 0) }
        return try rows(of: result)
    }

    /// `strings` as C strings (nil stays NULL) followed by a NULL, as libpq's arrays are, for the
    /// length of `body`.
    private static func withCStrings<Result>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Result) -> Result {
        let copies = strings.map { $0.map { strdup($0) } ?? nil } + [nil]
        defer { for copy in copies { free(copy) } }
        return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    /// Reads what the server has sent and returns the notifications among it (LISTEN).
    public func notifications() throws(PGError) -> [PGNotification] {
        guard pq.consumeInput(handle) == 1 else {
            throw PGError(sqlState: nil, message: Self.trimmed(pq.errorMessage(handle)), connectionLost: true)
        }
        var received: [PGNotification] = []
        while let notice = pq.notifies(handle) {
            received.append(PGNotification(channel: String(cString: notice.pointee.relname), payload: String(cString: notice.pointee.extra)))
            pq.freemem(notice)
        }
        return received
    }

    private func rows(of result: OpaquePointer?) throws(PGError) -> PGRows {
        guard let result else {
            throw PGError(sqlState: nil, message: Self.trimmed(pq.errorMessage(handle)), connectionLost: isBroken)
        }
        defer { pq.clear(result) }
        switch pq.resultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            break
        default:
            let state = pq.resultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PGError(sqlState: state, message: Self.trimmed(pq.resultErrorMessage(result)), connectionLost: isBroken)
        }
        let rowCount = Int(pq.ntuples(result))
        let columnCount = Int(pq.nfields(result))
        var values: [String?] = []
        values.reserveCapacity(rowCount * columnCount)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                values.append(pq.getisnull(result, row, column) == 1 ? nil : String(cString: pq.getvalue(result, row, column)))
            }
        }
        let affected = Int(String(cString: pq.cmdTuples(result))) ?? 0
        return PGRows(values: values, columnCount: columnCount, affected: affected)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        return String(String(cString: message).drop { $0 == " " }.reversed().drop { $0 == "\n" || $0 == " " }.reversed())
    }
}

/// One `NOTIFY` received on a channel this connection listens to.
public struct PGNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
}

/// The rows a statement returned, as text (nil for NULL), and how many rows it changed.
public struct PGRows: Sendable {
    private let values: [String?]
    public let columnCount: Int
    /// Rows inserted, updated or deleted (the command tag's count).
    public let affected: Int

    init(values: [String?], columnCount: Int, affected: Int) {
        self.values = values
        self.columnCount = columnCount
        self.affected = affected
    }

    public var count: Int { columnCount == 0 ? 0 : values.count / columnCount }

    public subscript(row: Int, column: Int) -> String? { values[row * columnCount + column] }

    public func integer(_ row: Int, _ column: Int) -> Int64 { self[row, column].flatMap { Int64($0) } ?? 0 }

    /// Every row, through `read`.
    public func map<T>(_ read: (PGRow) -> T) -> [T] { (0..<count).map { read(PGRow(rows: self, index: $0)) } }
}

/// One row of `PGRows`.
public struct PGRow {
    public let rows: PGRows
    public let index: Int

    public func text(_ column: Int) -> String? { rows[index, column] }
    public func integer(_ column: Int) -> Int64 { rows.integer(index, column) }
    public func isNull(_ column: Int) -> Bool { rows[index, column] == nil }
}
