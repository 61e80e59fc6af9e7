import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// Login, logout and who is logged in.
extension HTTPAPI {
    func sessionRoutes() -> [Route] {
        [
            Route(method: "POST", pattern: ["login"], needsLogin: false) { [unowned self] exchange, _ in login(exchange) },
            Route(method: "POST", pattern: ["logout"], needsLogin: true) { exchange, _ in Self.logout(exchange) },
            Route(method: "GET", pattern: ["me"], needsLogin: true) { exchange, _ in
                exchange.run(.whoami) { reply, _ in
                    guard case .whoami(let user, let isAdmin) = reply else { return exchange.respond(APIResponse.unexpected) }
                    exchange.respond(APIResponse.object(200, ["user": .string(user), "admin": .bool(isAdmin)]))
                }
            },
        ]
    }

    /// `{"user", "password", "label"?, "keep"?}`: checked as AUTH is (same pacing and lockouts), then a
    /// new token for this browser or script: in the body, and as the cookie.
    func login(_ exchange: Exchange) {
        guard let body = exchange.jsonBody(), let user = exchange.requiredString(body, "user"),
            let password = exchange.requiredString(body, "password"), let keep = exchange.optionalBool(body, "keep")
        else { return }
        var label = "web"
        if case .string(let given)? = body["label"] {
            label = given
        } else if let agent = exchange.request.header("User-Agent") {
            label = "web: " + Self.deviceName(userAgent: agent)
        }
        var bridge = exchange.bridge
        if bridge.isLoggedIn { bridge = exchange.connection.freshSession() }
        exchange.run(.auth(user: user, password: password)) { reply, _ in
            exchange.run(.tokenNew(label: label, endsWithBrowser: keep == false)) { reply, _ in
                guard case .token(let token) = reply else { return exchange.respond(APIResponse.unexpected) }
                // Logged in by password: a request with the token logs in afresh, so that
                // revoking the token reaches it.
                bridge.token = nil
                exchange.respond(APIResponse.object(
                    200, ["user": .string(bridge.session?.user ?? user), "token": .string(token)],
                    headers: [Self.cookie(token, secure: exchange.connection.isSecure, lasting: keep != false)]))
            }
        }
    }

    /// A short name for the device a User-Agent describes: `Chrome on Linux`, `Safari on
    /// iPhone`, `curl`; its first word when it names nothing known.
    static func deviceName(userAgent: String) -> String {
        let browsers = [("Edg/", "Edge"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"), ("Safari/", "Safari"), ("curl/", "curl")]
        let systems = [("Android", "Android"), ("iPhone", "iPhone"), ("iPad", "iPad"), ("Mac OS X", "macOS"), ("Windows", "Windows"), ("Linux", "Linux")]
        guard let browser = browsers.first(where: { userAgent.contains($0.0) })?.1 else {
            return String(userAgent.prefix { $0 != " " && $0 != "/" }.prefix(40))
        }
        guard let system = systems.first(where: { userAgent.contains($0.0) })?.1 else { return browser }
        return "\(browser) on \(system)"
    }

    /// Revokes the token the request logged in with; its connections are closed, this one
    /// after its answer, which says so (`Connection: close`): a client never sends a request
    /// the closing connection would leave unanswered.
    static func logout(_ exchange: Exchange) {
        guard let token = exchange.bridge.token else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "not logged in with a token") }
        exchange.run(.tokenRevoke(token)) { _, _ in
            exchange.connection.closeAfterResponding()
            exchange.respond(APIResponse.noContent(headers: [clearedCookie(secure: exchange.connection.isSecure)]))
        }
    }
}
