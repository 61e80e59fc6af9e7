import ServerKit
import Foundation
import HTTPKit
import SyncCore
import SyncProtocol

/// The operator's endpoints: members and roles, devices (tokens) with revoke, conflict copies
/// with keep-the-copy or keep-the-record, and the server's status.
extension HTTPAPI {
    func adminRoutes() -> [Route] {
        [
            Route(method: "GET", pattern: ["collections", "*", "members"], needsLogin: true) { exchange, path in
                var members: [Value] = []
                exchange.run(.members(collection: path[0]), collecting: { if case .member = $0 { true } else { false } }, onNotice: { notice in
                    guard case .member(let user, let role) = notice else { return }
                    members.append(.dictionary(["user": .string(user), "role": .string(role.name)]))
                }) { _, _ in exchange.respond(APIResponse.object(200, ["members": .array(members)])) }
            },
            Route(method: "PUT", pattern: ["collections", "*", "members", "*"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let name = exchange.requiredString(body, "role") else { return }
                let role = Role(name: name)
                guard role != nil || name.lowercased() == "none" else {
                    return exchange.fail(400, ErrorCode.badRequest.rawValue, "role must be read, write, admin or none")
                }
                Self.grant(exchange, path[0], path[1], role)
            },
            Route(method: "DELETE", pattern: ["collections", "*", "members", "*"], needsLogin: true) { exchange, path in
                Self.grant(exchange, path[0], path[1], nil)
            },
            Route(method: "GET", pattern: ["collections", "*", "conflicts"], needsLogin: true) { exchange, path in
                Self.listConflicts(exchange, path[0])
            },
            Route(method: "POST", pattern: ["collections", "*", "conflicts", "*", "resolve"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let keep = exchange.requiredString(body, "keep") else { return }
                guard keep == "copy" || keep == "current" else {
                    return exchange.fail(400, ErrorCode.badRequest.rawValue, "\"keep\" is copy (the conflict copy's fields win) or current (the record stays as it is)")
                }
                Self.resolve(exchange, path[0], copy: path[1], keepCopy: keep == "copy")
            },
            Route(method: "GET", pattern: ["tokens"], needsLogin: true) { exchange, _ in Self.listTokens(exchange) },
            Route(method: "DELETE", pattern: ["tokens", "*"], needsLogin: true) { exchange, path in
                exchange.run(.tokenRevoke(path[0])) { _, _ in exchange.respond(APIResponse.noContent()) }
            },
            Route(method: "GET", pattern: ["status"], needsLogin: true) { exchange, _ in
                exchange.run(.stats) { _, payload in exchange.respond(APIResponse.jsonText(200, payload ?? "{}")) }
            },
        ]
    }

    static func grant(_ exchange: Exchange, _ collection: String, _ user: String, _ role: Role?) {
        exchange.run(.grant(collection: collection, user: user, role: role)) { _, _ in
            exchange.respond(APIResponse.object(200, ["user": .string(user), "role": .string(role?.name ?? "none")]))
        }
    }

    /// The conflict copies of a collection, each with the record it is a copy of.
    static func listConflicts(_ exchange: Exchange, _ collection: String) {
        var copies: [String] = []
        let companion = Names.conflictsCollection(of: collection)
        exchange.run(.list(collection: companion), collecting: { if case .record = $0 { true } else { false } }, onNotice: { notice in
            guard case .record(_, let state) = notice else { return }
            copies.append(APIResponse.recordJSON(state, of: originalID(state.id)))
        }) { _, _ in exchange.respond(APIResponse.jsonText(200, "{\"conflicts\":[\(copies.joined(separator: ","))]}")) }
    }

    /// Keeps the copy (its fields written over the record, at the record's current rev) or the
    /// record as it is; either way the copy is deleted. A record changed meanwhile is a 409.
    static func resolve(_ exchange: Exchange, _ collection: String, copy: String, keepCopy: Bool) {
        let companion = Names.conflictsCollection(of: collection)
        exchange.run(.get(collection: companion, id: copy)) { reply, copyFields in
            guard case .record(_, _, let copyRev, let position) = reply, position != nil, let copyFields else {
                return exchange.fail(404, ErrorCode.notFound.rawValue, "no conflict copy \(copy) in \(collection)")
            }
            let deleteCopy = {
                exchange.run(.delete(collection: companion, id: copy, baseRev: copyRev)) { _, _ in
                    exchange.respond(APIResponse.object(200, ["kept": .string(keepCopy ? "copy" : "current"), "copy": .string(copy)]))
                }
            }
            guard keepCopy else { return deleteCopy() }
            let id = originalID(copy)
            exchange.bridge.request(.get(collection: collection, id: id)) { answer in
                let rev: Int64
                switch answer {
                case .ok(.record(_, _, let current, _), _): rev = current
                case .refused(let error) where error.code == .notFound: rev = 0  // the copy is all that is left: it becomes the record
                default: return exchange.respond(APIResponse.response(for: answer))
                }
                exchange.run(.put(collection: collection, id: id, baseRev: rev, fieldsJSON: copyFields)) { _, _ in deleteCopy() }
            }
        }
    }

    /// The id of the record a conflict copy `<id>.sync-conflict-<stamp>-<device>` is of.
    static func originalID(_ copy: String) -> String {
        guard let marker = copy.range(of: ".sync-conflict-") else { return copy }
        return String(copy[..<marker.lowerBound])
    }

    static func listTokens(_ exchange: Exchange) {
        var devices: [Value] = []
        exchange.run(.tokenList, collecting: { if case .token = $0 { true } else { false } }, onNotice: { notice in
            guard case .token(let token, let isThisConnection) = notice else { return }
            devices.append(.dictionary([
                "id": .string(token.id), "created": .string(ServerNotice.time(token.createdAt)),
                "last_used": .string(token.lastUsedAt.map(ServerNotice.time) ?? ""), "this": .bool(isThisConnection), "label": .string(token.label ?? ""),
                "ends_with_browser": .bool(token.endsWithBrowser),
            ]))
        }) { _, _ in exchange.respond(APIResponse.object(200, ["devices": .array(devices)])) }
    }
}
