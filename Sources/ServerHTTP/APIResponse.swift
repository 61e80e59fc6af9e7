import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// The API's responses: JSON bodies in the wire's type-preserving encoding, errors as
/// `{"error": CODE, "message": text}` with the status each line-protocol code maps to.
enum APIResponse {
    /// Every API response: never cached, never sniffed into another type.
    static let apiHeaders = [HTTPHeader("Cache-Control", "no-store"), HTTPHeader("X-Content-Type-Options", "nosniff")]

    static func json(_ status: Int, _ value: Value, headers: [HTTPHeader] = []) -> HTTPResponse {
        jsonText(status, ValueJSON.encode(value), headers: headers)
    }

    /// A JSON body's headers, every API response's included.
    static let jsonHeaders = [HTTPHeader("Content-Type", "application/json")] + apiHeaders

    /// A body that is JSON text already.
    static func jsonText(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", text: text + "\n", headers: apiHeaders + headers)
    }

    static func object(_ status: Int, _ members: [String: Value], headers: [HTTPHeader] = []) -> HTTPResponse {
        json(status, .dictionary(members), headers: headers)
    }

    static func noContent(headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(status: 204, headers: apiHeaders + headers)
    }

    static func error(status: Int, code: String, message: String, extra: [String: Value] = [:], headers: [HTTPHeader] = []) -> HTTPResponse {
        var members = extra
        members["error"] = .string(code)
        members["message"] = .string(message)
        return object(status, members, headers: headers)
    }

    /// The response for a protocol error, with the status its code maps to.
    static func error(_ error: ProtocolError) -> HTTPResponse {
        self.error(status: status(of: error.code), code: error.code.rawValue, message: error.message)
    }

    /// The response for a request that did not end in `OK`: the session's error, a conflict's
    /// 409 with the server's record (`creating`: the request made a new record, so the conflict
    /// is that one by its id exists), or the session's end before the answer.
    static func response(for answer: SessionBridge.Answer, creating: Bool = false) -> HTTPResponse {
        switch answer {
        case .refused(let error):
            return self.error(error)
        case .conflict(let collection, let id, let current):
            return conflict(collection: collection, id: id, current: current, creating: creating)
        case .closed(let reason):
            let (status, message) = closedStatus(reason)
            return self.error(status: status, code: (reason.bye ?? .busy).rawValue, message: message)
        case .ok:
            return unexpected
        }
    }

    /// A reply of another kind than the request's (a server bug, never a client's doing).
    static let unexpected = error(status: 500, code: ErrorCode.internal.rawValue, message: "the server answered with an unexpected reply")

    /// A stale write's 409: the server's record as `current` (`missing` when it never existed);
    /// a create's names the id that exists.
    static func conflict(collection: String, id: String, current: RecordState?, creating: Bool = false) -> HTTPResponse {
        let record = current.map { recordJSON($0) } ?? "{\"id\":\(ValueJSON.quoted(id)),\"missing\":true,\"rev\":0}"
        let message = current.map {
            creating ? "a record \(ValueJSON.quoted(id)) already exists in \(collection) (rev \($0.rev)): pick another id, or edit that one"
                : "the record is at rev \($0.rev); the request's If-Match is stale"
        } ?? "there is no such record to change"
        return jsonText(409, "{\"current\":\(record),\"error\":\"CONFLICT\",\"message\":\(ValueJSON.quoted(message))}")
    }

    /// The status and words for a session that ended before it answered.
    static func closedStatus(_ reason: CloseReason) -> (Int, String) {
        switch reason {
        case .revoked: (401, "the login was revoked (token revoked, password changed or account removed)")
        case .idle, .authTimeout: (408, "the connection was idle too long")
        case .authRequired: (401, "too many requests without logging in")
        case .lineTooLong: (413, "the request is too large")
        case .shutdown: (503, "the server is shutting down")
        case .slow, .busy: (503, "the server is short of memory; retry in a moment")
        case .quit, .eof, .socketError: (503, "the connection is closing")
        }
    }

    /// The HTTP status for each of the line protocol's error codes.
    static func status(of code: ErrorCode) -> Int {
        switch code {
        case .badRequest, .unknownCommand, .unsupportedVersion: 400
        case .authRequired, .authFailed: 401
        case .forbidden, .quota: 403
        case .notFound: 404
        case .exists, .conflict: 409
        case .expired: 410
        case .tooLarge: 413
        case .rateLimited: 429
        case .internal: 500
        case .busy, .unavailable: 503
        case .noSpace: 507
        }
    }

    /// A record as the API shows it: `{"fields","id","position","rev"}`, or
    /// `{"deleted":true,"id","rev"}` for a tombstone, with `of` (a conflict copy's record) and
    /// `seq` when given. The fields are spliced in as the store keeps them (canonical, so the
    /// whole object is canonical: members in key order), not decoded and encoded again.
    static func recordJSON(_ state: RecordState, of original: String? = nil, seq: Int64? = nil) -> String {
        var out: [UInt8] = []
        writeRecord(state, of: original, seq: seq, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `recordJSON`, appended to `out` as bytes.
    static func writeRecord(_ state: RecordState, of original: String? = nil, seq: Int64? = nil, into out: inout [UInt8]) {
        out.reserveCapacity(out.count + 64 + state.id.utf8.count + state.storedFieldBytes)
        out.append(UInt8(ascii: "{"))
        switch state.body {
        case .deleted:
            out += #""deleted":true,"#.utf8
        case .live(_, let fields):
            out += #""fields":"#.utf8
            out += fields.utf8
            out.append(UInt8(ascii: ","))
        }
        out += #""id":"#.utf8
        ValueJSON.writeString(state.id, into: &out)
        if let original {
            out += #","of":"#.utf8
            ValueJSON.writeString(original, into: &out)
        }
        if let position = state.position {
            out += #","position":"#.utf8
            ValueJSON.writeString(position, into: &out)
        }
        out += #","rev":"#.utf8
        out += String(state.rev).utf8
        if let seq {
            out += #","seq":"#.utf8
            out += String(seq).utf8
        }
        out.append(UInt8(ascii: "}"))
    }
}
