/// One HTTP/1.1 request as a client sent it: what the API and the console are asked.
public struct HTTPRequest: Sendable, Equatable {
    /// `GET`, `PUT`, `POST`, `DELETE`, ... as the parser names it.
    public var method: String
    /// The request target as sent: the path and any query (`/api/c/contacts?limit=100`).
    public var target: String
    /// Every header in the order sent, names as spelled (a name may come twice).
    public var headers: [HTTPHeader]
    /// The body, chunked transfer coding already removed.
    public var body: [UInt8]
    /// Whether the connection stays open after the response (HTTP/1.1 unless `Connection:
    /// close`; HTTP/1.0 only with `Connection: keep-alive`).
    public var keepAlive: Bool

    public init(method: String, target: String, headers: [HTTPHeader] = [], body: [UInt8] = [], keepAlive: Bool = true) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }

    /// The first value of a header, its name compared without case (`If-Match`, `if-match`).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// Roughly the bytes the request holds: target, headers and body.
    public var heldBytes: Int {
        target.utf8.count + body.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
    }

    /// The target's path, without the query.
    public var path: Substring { HTTPTarget.originForm(target).split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "" }
}

/// One header line of a request.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
