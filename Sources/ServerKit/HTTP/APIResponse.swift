import HTTPKit
import SyncProtocol

/// The API's responses: JSON bodies in the wire's type-preserving encoding, errors as
/// `{"error": CODE, "message": text}` with the status each line-protocol code maps to.
enum APIResponse {
    /// Every API response: never cached, never sniffed into another type.
    static let apiHeaders = [HTTPHeader("Cache-Control", "no-store"), HTTPHeader("X-Content-Type-Options", "nosniff")]

    static func json(_ status: Int, _ value: Value, headers: [HTTPHeader] = []) -> HTTPResponse {
        jsonText(status, ValueJSON.encode(value), headers: headers)
    }

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

    /// The response for a line-protocol error reply (`ERR CODE text…`).
    static func error(_ reply: ServerLine) -> HTTPResponse {
        let code = reply.words.count > 1 ? reply.words[1] : ErrorCode.internal.rawValue
        let message = reply.words.dropFirst(2).joined(separator: " ")
        return error(status: status(of: ErrorCode(rawValue: code) ?? .internal), code: code, message: message)
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

    /// A record as the API shows it: id, rev, position and fields, or `deleted` for a
    /// tombstone (the words of a `RECORD`, `CHANGE`, `GET` or `CONFLICT` line from its id on).
    static func record(id: String, rev: String, position: String, fields: Fields?, seq: String? = nil) -> Value {
        var members: [String: Value] = ["id": .string(id), "rev": .integer(Int64(rev) ?? 0)]
        if position == "-" {
            members["deleted"] = .bool(true)
        } else {
            members["position"] = .string(position)
            members["fields"] = .dictionary(fields ?? [:])
        }
        if let seq { members["seq"] = .integer(Int64(seq) ?? 0) }
        return .dictionary(members)
    }

    /// `record(...)` of the words `id rev position` starting at `index`.
    static func record(_ line: ServerLine, from index: Int, seq: String? = nil) -> Value? {
        guard line.words.count >= index + 3 else { return nil }
        let words = line.words
        return record(id: words[index], rev: words[index + 1], position: words[index + 2], fields: line.fields, seq: seq)
    }

    /// The same record as JSON text, the fields spliced in as the server wrote them (canonical:
    /// members in key order, so the whole object is canonical too) without decoding them.
    static func recordText(_ line: ServerLine, from index: Int, seq: String? = nil) -> String? {
        let words = line.words
        guard words.count >= index + 3, let rev = Int64(words[index + 1]) else { return nil }
        let id = ValueJSON.quoted(words[index])
        let tail = "\"rev\":\(rev)" + (seq.flatMap { Int64($0) }.map { ",\"seq\":\($0)" } ?? "") + "}"
        if words[index + 2] == "-" { return "{\"deleted\":true,\"id\":\(id)," + tail }
        guard let fields = line.payloadText ?? line.payload.map({ ValueJSON.encode(fields: $0) }) else { return nil }
        return "{\"fields\":\(fields),\"id\":\(id),\"position\":\(ValueJSON.quoted(words[index + 2]))," + tail
    }
}

extension ServerLine {
    /// A tagged `OK` reply.
    var isOK: Bool { words.first == "OK" }
    /// The error code of an `ERR` reply.
    var errorCode: ErrorCode? { words.first == "ERR" && words.count > 1 ? ErrorCode(rawValue: words[1]) : nil }
}
