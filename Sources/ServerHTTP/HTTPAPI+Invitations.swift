import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// Invitations over HTTP: a collection admin makes, lists and revokes them; the join page
/// reads what a secret invites to and redeems it, as a login does (token and cookie).
extension HTTPAPI {
    func invitationRoutes() -> [Route] {
        [
            Route(method: "POST", pattern: ["collections", "*", "invitations"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let roleName = exchange.requiredString(body, "role") else { return }
                guard let role = Role(name: roleName) else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "role must be read, write or admin") }
                guard let days = exchange.optionalNumber(body, "expires_days"), let uses = exchange.optionalNumber(body, "uses"),
                    let note = exchange.optionalString(body, "note")
                else { return }
                let seconds = days.map { Int64(($0 * 86_400).rounded()) } ?? CommandParser.defaultInvitationSeconds
                let collection = path[0]
                exchange.run(.inviteNew(collection: collection, role: role, expiresInSeconds: seconds, uses: uses.map { Int($0) } ?? 1, note: note)) { reply, _ in
                    guard case .invited(let secret, let id, let expiresAt) = reply else { return exchange.respond(APIResponse.unexpected) }
                    exchange.respond(APIResponse.object(201, [
                        "id": .string(id), "secret": .string(secret), "link": .string(Self.joinLink(exchange, secret: secret)),
                        "role": .string(role.name), "expires": .string(ServerNotice.time(expiresAt)), "uses": .integer(Int64(uses.map { Int($0) } ?? 1)),
                    ], headers: [HTTPHeader("Location", "/api/collections/\(collection)/invitations/\(id)")]))
                }
            },
            Route(method: "GET", pattern: ["collections", "*", "invitations"], needsLogin: true) { exchange, path in
                var invitations: [Value] = []
                exchange.run(.inviteList(collection: path[0]), collecting: { if case .invitation = $0 { true } else { false } }, onNotice: { notice in
                    guard case .invitation(let invitation) = notice else { return }
                    invitations.append(.dictionary([
                        "id": .string(invitation.id), "role": .string(invitation.role.name), "uses": .integer(Int64(invitation.uses)),
                        "allowed": .integer(Int64(invitation.usesAllowed)), "created": .string(ServerNotice.time(invitation.createdAt)),
                        "expires": .string(ServerNotice.time(invitation.expiresAt)), "made_by": .string(invitation.madeBy), "note": .string(invitation.note ?? ""),
                    ]))
                }) { _, _ in exchange.respond(APIResponse.object(200, ["invitations": .array(invitations)])) }
            },
            Route(method: "DELETE", pattern: ["collections", "*", "invitations", "*"], needsLogin: true) { exchange, path in
                exchange.run(.inviteRevoke(collection: path[0], id: path[1])) { _, _ in exchange.respond(APIResponse.noContent()) }
            },
            Route(method: "POST", pattern: ["invitation"], needsLogin: false) { exchange, _ in
                guard let body = exchange.jsonBody(), let secret = exchange.requiredString(body, "secret") else { return }
                exchange.run(.invitePeek(secret: secret)) { reply, _ in
                    guard case .invitation(let summary) = reply else { return exchange.respond(APIResponse.unexpected) }
                    exchange.respond(APIResponse.object(200, [
                        "collection": .string(summary.collection), "role": .string(summary.role.name), "made_by": .string(summary.madeBy),
                        "expires": .string(ServerNotice.time(summary.expiresAt)), "uses_left": .integer(Int64(summary.usesLeft)),
                        "makes_accounts": .bool(summary.makesAccounts), "note": .string(summary.note ?? ""),
                    ]))
                }
            },
            Route(method: "POST", pattern: ["join"], needsLogin: false) { exchange, _ in Self.join(exchange) },
        ]
    }

    /// `{"secret", "user", "password", "new"?, "keep"?, "label"?}`: redeems the invitation with
    /// a new account (`new`) or an existing one, then answers as a login does.
    static func join(_ exchange: Exchange) {
        guard let body = exchange.jsonBody(), let secret = exchange.requiredString(body, "secret"), let user = exchange.requiredString(body, "user"),
            let password = exchange.requiredString(body, "password"), let isNew = exchange.optionalBool(body, "new"),
            let keep = exchange.optionalBool(body, "keep"), let given = exchange.optionalString(body, "label")
        else { return }
        let label = given ?? exchange.request.header("User-Agent").map { "web: " + deviceName(userAgent: $0) } ?? "web"
        let account: RedeemingAccount = isNew == true ? .new(user: user, password: password) : .existing(user: user, password: password)
        let bridge = exchange.bridge.isLoggedIn ? exchange.connection.freshSession() : exchange.bridge
        exchange.run(.redeem(secret: secret, account: account, label: label, endsWithBrowser: keep == false)) { reply, _ in
            guard case .redeemed(let name, let collection, let role, let token) = reply else { return exchange.respond(APIResponse.unexpected) }
            bridge.token = nil
            exchange.respond(APIResponse.object(
                200, ["user": .string(name), "collection": .string(collection), "role": .string(role.name), "token": .string(token)],
                headers: [cookie(token, secure: exchange.connection.isSecure, lasting: keep != false)]))
        }
    }

    /// The link an invitee opens: this server's address as the request reached it, and in the
    /// fragment (which no browser sends, so no log or proxy sees it) the secret, the line
    /// protocol's port and, under TLS, the certificate's fingerprint to pin.
    static func joinLink(_ exchange: Exchange, secret: String) -> String {
        let front = exchange.connection.front
        let authority = exchange.request.header("Host") ?? front.address.map { "\($0.host):\($0.port)" } ?? "localhost"
        return InvitationLink.text(isSecure: exchange.connection.isSecure, authority: authority, secret: secret,
                                   linePort: front.core.linePort, fingerprint: front.core.configuration.certificateFingerprint)
    }
}

extension Exchange {
    /// A number member of a JSON body (nil when absent), or nil after answering 400.
    func optionalNumber(_ body: Fields, _ name: String) -> Double?? {
        optional(body, name, "a number") { value in
            switch value {
            case .integer(let number): Double(number)
            case .real(let number): number
            default: nil
            }
        }
    }

    /// A string member of a JSON body (nil when absent), or nil after answering 400.
    func optionalString(_ body: Fields, _ name: String) -> String?? {
        optional(body, name, "a string") { if case .string(let text) = $0 { text } else { nil } }
    }

    /// A boolean member of a JSON body (nil when absent), or nil after answering 400.
    func optionalBool(_ body: Fields, _ name: String) -> Bool?? {
        optional(body, name, "true or false") { if case .bool(let flag) = $0 { flag } else { nil } }
    }

    /// A member `read` takes (nil when absent), or nil after answering 400 saying it is `kind`:
    /// the outer optional says whether to go on.
    private func optional<T>(_ body: Fields, _ name: String, _ kind: String, _ read: (Value) -> T?) -> T?? {
        guard let value = body[name] else { return .some(nil) }
        guard let found = read(value) else {
            fail(400, ErrorCode.badRequest.rawValue, "\"\(name)\" is \(kind)")
            return nil
        }
        return .some(found)
    }
}
