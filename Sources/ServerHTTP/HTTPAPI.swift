import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// The HTTP/JSON API (Protocol/HTTP.md) and the console's files. Each API request becomes one
/// or a few line-protocol requests run in the connection's session, so every rule (roles,
/// revisions, conflicts, quotas, login pacing) is the line protocol's own.
final class HTTPAPI {
    /// The cookie a browser's login sets.
    static let cookieName = "plistsync_token"
    /// The header a request authenticated by the cookie must carry to change anything: a page
    /// on another site cannot send it (it is not a simple request), so it cannot forge one.
    static let csrfHeader = "X-PlistSync-CSRF"

    typealias Handler = (Exchange, [String]) -> Void

    /// One endpoint: its method, its path under `/api` (`*` takes any one segment, handed to
    /// the handler in order), whether it needs a login, and what it does.
    struct Route {
        let method: String
        let pattern: [String]
        let needsLogin: Bool
        let handler: Handler
    }

    private(set) var routes: [Route] = []

    init() {
        routes = sessionRoutes() + recordRoutes() + historyRoutes() + adminRoutes() + accountRoutes() + invitationRoutes()
    }

    func serve(_ request: HTTPRequest, on connection: HTTPConnection) {
        guard let target = HTTPTarget(request.target) else {
            return connection.respond(APIResponse.error(status: 400, code: "BAD_REQUEST", message: "the path is not valid percent-encoded UTF-8"))
        }
        guard target.segments.first == "api" else {
            return connection.respond(ConsoleFiles.response(for: request, path: target.segments))
        }
        let exchange = Exchange(request: request, target: target, connection: connection)
        let path = Array(target.segments.dropFirst())
        // HEAD wherever GET works: the same answer without its body.
        let method = request.method == "HEAD" ? "GET" : request.method
        var allowed: [String] = []
        for route in routes {
            guard let captures = Self.match(route.pattern, path) else { continue }
            guard route.method == method else {
                allowed.append(route.method)
                if route.method == "GET" { allowed.append("HEAD") }
                continue
            }
            guard route.needsLogin else { return route.handler(exchange, captures) }
            return authenticate(exchange) { route.handler(exchange, captures) }
        }
        if allowed.isEmpty {
            exchange.fail(404, "NOT_FOUND", "no endpoint \(request.method) \(request.path); see Protocol/HTTP.md")
        } else {
            exchange.respond(APIResponse.error(
                status: 405, code: "METHOD_NOT_ALLOWED", message: "\(request.path) takes \(allowed.joined(separator: ", "))",
                headers: [HTTPHeader("Allow", allowed.joined(separator: ", "))]))
        }
    }

    static func match(_ pattern: [String], _ path: [String]) -> [String]? {
        guard pattern.count == path.count else { return nil }
        var captures: [String] = []
        for (want, have) in zip(pattern, path) {
            if want == "*" {
                captures.append(have)
            } else if want != have {
                return nil
            }
        }
        return captures
    }

    /// Logs the connection's session in with the request's token (`Authorization: Bearer`, or
    /// the cookie with the CSRF header for anything but a read), unless it already is.
    func authenticate(_ exchange: Exchange, then body: @escaping () -> Void) {
        let request = exchange.request
        let bearer = request.bearerToken
        guard let token = bearer ?? request.cookie(Self.cookieName), !token.isEmpty else {
            return exchange.fail(401, ErrorCode.authRequired.rawValue, "log in first: POST /api/login, or send Authorization: Bearer <token>")
        }
        if bearer == nil, !["GET", "HEAD"].contains(request.method), request.header(Self.csrfHeader) == nil {
            return exchange.fail(403, "CSRF", "a request authenticated by cookie must send the \(Self.csrfHeader) header to change anything")
        }
        var bridge = exchange.connection.bridge!
        if bridge.isLoggedIn, bridge.token == token { return body() }
        if bridge.isLoggedIn { bridge = exchange.connection.freshSession() }
        bridge.request(.authToken(token), bytes: token.utf8.count) { answer in
            guard case .ok = answer else {
                var response = APIResponse.response(for: answer)
                if bearer == nil, case .refused(let error) = answer, error.code == .authFailed {
                    response.headers.append(Self.clearedCookie(secure: exchange.connection.isSecure))
                }
                return exchange.respond(response)
            }
            bridge.token = token
            body()
        }
    }

    /// The login cookie: for a year (`lasting`: "keep me signed in"), else until the browser
    /// closes (no Max-Age).
    static func cookie(_ token: String, secure: Bool, lasting: Bool = true) -> HTTPHeader {
        HTTPHeader("Set-Cookie", "\(cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict" + (lasting ? "; Max-Age=31536000" : "") + (secure ? "; Secure" : ""))
    }

    static func clearedCookie(secure: Bool) -> HTTPHeader {
        HTTPHeader("Set-Cookie", "\(cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" + (secure ? "; Secure" : ""))
    }
}

/// One API request being answered: the request, its parsed target, and the connection (and
/// so the session) it runs on.
struct Exchange {
    let request: HTTPRequest
    let target: HTTPTarget
    let connection: HTTPConnection

    var bridge: SessionBridge { connection.bridge }

    func respond(_ response: HTTPResponse) {
        connection.respond(response)
    }

    func fail(_ status: Int, _ code: String, _ message: String) {
        respond(APIResponse.error(status: status, code: code, message: message))
    }

    /// Runs `command` in the session; an `OK` goes to `then` with its payload, anything else
    /// is answered as the API's error (`APIResponse.response(for:creating:)`). `collecting` picks the
    /// notices that belong to the reply, handed to `onNotice`.
    func run(
        _ command: Command, creating: Bool = false, collecting: @escaping (ServerNotice) -> Bool = { _ in false },
        onNotice: @escaping (ServerNotice) -> Void = { _ in }, then: @escaping (Reply, _ payload: String?) -> Void
    ) {
        bridge.request(command, bytes: 64 + request.body.count, collecting: collecting, onNotice: onNotice) { answer in
            guard case .ok(let reply, let payload) = answer else { return respond(APIResponse.response(for: answer, creating: creating)) }
            then(reply, payload)
        }
    }

    /// The request's body as a JSON object, or nil after answering 400/415.
    func jsonBody() -> Fields? {
        let type = request.header("Content-Type")?.lowercased() ?? ""
        guard type.hasPrefix("application/json") else {
            fail(415, "UNSUPPORTED_MEDIA_TYPE", "send the body as Content-Type: application/json")
            return nil
        }
        do {
            return try ValueJSON.decodeFields(request.body)
        } catch {
            fail(400, ErrorCode.badRequest.rawValue, "the body is not a JSON object: \(error.message)")
            return nil
        }
    }

    /// A string member of a JSON body, or nil after answering 400.
    func requiredString(_ body: Fields, _ name: String) -> String? {
        guard case .string(let text)? = body[name] else {
            fail(400, ErrorCode.badRequest.rawValue, "the body needs \"\(name)\" as a string")
            return nil
        }
        return text
    }

}
