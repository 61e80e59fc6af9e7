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
        headers.first { $0.hasName(name) }?.value
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

    /// Whether this header is `wanted`, compared as RFC 9110 says (ASCII letters without case),
    /// with no string made on the way: it is asked several times a request.
    public func hasName(_ wanted: String) -> Bool {
        Self.equalIgnoringASCIICase(name.utf8, wanted)
    }

    /// Whether `bytes` spell `wanted` with ASCII letters compared without case (header names,
    /// auth schemes).
    public static func equalIgnoringASCIICase(_ bytes: some Collection<UInt8>, _ wanted: String) -> Bool {
        var own = bytes.makeIterator()
        for byte in wanted.utf8 {
            guard let mine = own.next(), lowercased(mine) == lowercased(byte) else { return false }
        }
        return own.next() == nil
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }
}
