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

    /// A record as the API shows it, from the words `id rev position` of a `RECORD`, `CHANGE`,
    /// `GET` or `CONFLICT` line starting at `index`: `{"fields","id","position","rev"}`, or
    /// `{"deleted":true,"id","rev"}` for a tombstone, with `of` (a conflict copy's record) and
    /// `seq` when given. The fields are spliced in as the server wrote them (canonical, so the
    /// whole object is canonical: members in key order), not decoded and encoded again.
    static func recordText(_ line: ServerLine, from index: Int, of original: String? = nil, seq: String? = nil) -> String? {
        let words = line.words
        guard words.count >= index + 3, let rev = Int64(words[index + 1]) else { return nil }
        var text = "{"
        if words[index + 2] == "-" {
            text += "\"deleted\":true,"
        } else {
            guard let fields = line.payloadText ?? line.payload.map({ ValueJSON.encode(fields: $0) }) else { return nil }
            text += "\"fields\":\(fields),"
        }
        text += "\"id\":\(ValueJSON.quoted(words[index])),"
        if let original { text += "\"of\":\(ValueJSON.quoted(original)),"}
        if words[index + 2] != "-" { text += "\"position\":\(ValueJSON.quoted(words[index + 2]))," }
        text += "\"rev\":\(rev)"
        if let seq = seq.flatMap({ Int64($0) }) { text += ",\"seq\":\(seq)" }
        return text + "}"
    }
}

extension ServerLine {
    /// A tagged `OK` reply.
    var isOK: Bool { words.first == "OK" }
    /// The error code of an `ERR` reply.
    var errorCode: ErrorCode? { words.first == "ERR" && words.count > 1 ? ErrorCode(rawValue: words[1]) : nil }
}
