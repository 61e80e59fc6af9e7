import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// Accounts over HTTP: server admins list, add, change and remove users (USER), everyone
/// changes their own password (PASSWD).
extension HTTPAPI {
    func accountRoutes() -> [Route] {
        [
            Route(method: "GET", pattern: ["users"], needsLogin: true) { exchange, _ in
                var users: [Value] = []
                exchange.run(.userList, collecting: { if case .user = $0 { true } else { false } }, onNotice: { notice in
                    guard case .user(let name, let isAdmin) = notice else { return }
                    users.append(.dictionary(["name": .string(name), "admin": .bool(isAdmin)]))
                }) { _, _ in exchange.respond(APIResponse.object(200, ["users": .array(users)])) }
            },
            Route(method: "POST", pattern: ["users"], needsLogin: true) { exchange, _ in
                guard let body = exchange.jsonBody(), let name = exchange.requiredString(body, "name"),
                    let password = exchange.requiredString(body, "password"), let isAdmin = exchange.optionalBool(body, "admin")
                else { return }
                exchange.run(.userAdd(name: name, password: password, isAdmin: isAdmin ?? false)) { _, _ in
                    exchange.respond(APIResponse.object(
                        201, ["name": .string(name), "admin": .bool(isAdmin ?? false)], headers: [HTTPHeader("Location", "/api/users/\(name)")]))
                }
            },
            Route(method: "PATCH", pattern: ["users", "*"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let isAdmin = exchange.optionalBool(body, "admin") else { return }
                var password: String?
                if let given = body["password"] {
                    guard case .string(let text) = given else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "\"password\" is a string") }
                    password = text
                }
                guard password != nil || isAdmin != nil else {
                    return exchange.fail(400, ErrorCode.badRequest.rawValue, "send \"password\" (a new one), \"admin\" (true or false) or both")
                }
                let name = path[0]
                let setAdmin = { (then: @escaping () -> Void) in
                    guard let isAdmin else { return then() }
                    exchange.run(.userAdmin(name: name, isAdmin: isAdmin)) { _, _ in then() }
                }
                let setPassword = { (then: @escaping () -> Void) in
                    guard let password else { return then() }
                    exchange.run(.userPassword(name: name, password: password)) { _, _ in then() }
                }
                setPassword { setAdmin { exchange.respond(APIResponse.noContent()) } }
            },
            Route(method: "DELETE", pattern: ["users", "*"], needsLogin: true) { exchange, path in
                exchange.run(.userRemove(name: path[0])) { _, _ in exchange.respond(APIResponse.noContent()) }
            },
            Route(method: "POST", pattern: ["password"], needsLogin: true) { exchange, _ in
                guard let body = exchange.jsonBody(), let old = exchange.requiredString(body, "old"),
                    let new = exchange.requiredString(body, "new")
                else { return }
                exchange.bridge.request(.passwd(old: old, new: new), bytes: 64 + exchange.request.body.count) { answer in
                    switch answer {
                    case .ok: exchange.respond(APIResponse.noContent())
                    case .refused(let error) where error.code == .authFailed:
                        // The request is logged in; only the current password it gave is wrong (a
                        // 401 would tell a browser its session ended).
                        exchange.fail(403, error.code.rawValue, "the current password is wrong")
                    default: exchange.respond(APIResponse.response(for: answer))
                    }
                }
            },
        ]
    }
}
