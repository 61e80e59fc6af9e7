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
                exchange.run("MEMBERS \(ResponseLine.argument(path[0]))", listing: ["MEMBER"], onLine: { line in
                    guard line.words.count >= 3 else { return }
                    members.append(.dictionary(["user": .string(line.words[1]), "role": .string(line.words[2])]))
                }) { _ in exchange.respond(APIResponse.object(200, ["members": .array(members)])) }
            },
            Route(method: "PUT", pattern: ["collections", "*", "members", "*"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let role = exchange.requiredString(body, "role") else { return }
                Self.grant(exchange, path[0], path[1], role)
            },
            Route(method: "DELETE", pattern: ["collections", "*", "members", "*"], needsLogin: true) { exchange, path in
                Self.grant(exchange, path[0], path[1], "none")
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
                exchange.run("TOKEN REVOKE \(ResponseLine.argument(path[0]))") { _ in exchange.respond(APIResponse.noContent()) }
            },
            Route(method: "GET", pattern: ["status"], needsLogin: true) { exchange, _ in
                exchange.run("STATS") { reply in exchange.respond(APIResponse.json(200, .dictionary(reply.fields ?? [:]))) }
            },
        ]
    }

    static func grant(_ exchange: Exchange, _ collection: String, _ user: String, _ role: String) {
        exchange.run("GRANT \(ResponseLine.argument(collection)) \(ResponseLine.argument(user)) \(ResponseLine.argument(role))") { _ in
            exchange.respond(APIResponse.object(200, ["user": .string(user), "role": .string(role)]))
        }
    }

    /// The conflict copies of a collection, each with the record it is a copy of.
    static func listConflicts(_ exchange: Exchange, _ collection: String) {
        var copies: [String] = []
        let companion = Names.conflictsCollection(of: collection)
        exchange.run("LIST \(ResponseLine.argument(companion))", listing: ["RECORD"], onLine: { line in
            guard line.words.count > 2, let copy = APIResponse.recordText(line, from: 2, of: originalID(line.words[2])) else { return }
            copies.append(copy)
        }) { _ in exchange.respond(APIResponse.jsonText(200, "{\"conflicts\":[\(copies.joined(separator: ","))]}")) }
    }

    /// Keeps the copy (its fields written over the record, at the record's current rev) or the
    /// record as it is; either way the copy is deleted. A record changed meanwhile is a 409.
    static func resolve(_ exchange: Exchange, _ collection: String, copy: String, keepCopy: Bool) {
        let companion = Names.conflictsCollection(of: collection)
        exchange.run("GET \(ResponseLine.argument(companion)) \(ResponseLine.argument(copy))") { copyReply in
            guard copyReply.words.count >= 6, copyReply.words[5] != "-" else {
                return exchange.fail(404, ErrorCode.notFound.rawValue, "no conflict copy \(copy) in \(collection)")
            }
            let copyRev = copyReply.words[4]
            let deleteCopy = {
                exchange.run("DEL \(ResponseLine.argument(companion)) \(ResponseLine.argument(copy)) \(copyRev)") { _ in
                    exchange.respond(APIResponse.object(200, ["kept": .string(keepCopy ? "copy" : "current"), "copy": .string(copy)]))
                }
            }
            guard keepCopy else { return deleteCopy() }
            let id = originalID(copy)
            exchange.bridge.request("GET \(ResponseLine.argument(collection)) \(ResponseLine.argument(id))") { recordReply in
                let rev: String
                if recordReply.isOK, recordReply.words.count >= 5 {
                    rev = recordReply.words[4]
                } else if recordReply.errorCode == .notFound {
                    rev = "0"  // the copy is all that is left: it becomes the record
                } else {
                    return exchange.respond(APIResponse.error(recordReply))
                }
                let fields = copyReply.payloadText ?? ValueJSON.encode(fields: copyReply.fields ?? [:])
                exchange.bridge.request("PUT \(ResponseLine.argument(collection)) \(ResponseLine.argument(id)) \(rev) \(fields)") { put in
                    guard put.isOK else { return exchange.respond(writeResponse(put)) }
                    deleteCopy()
                }
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
        exchange.run("TOKEN LIST", listing: ["TOKEN"], onLine: { line in
            let words = line.words
            guard words.count >= 6 else { return }
            devices.append(.dictionary([
                "id": .string(words[1]), "created": .string(words[2]), "last_used": words[3] == "-" ? .string("") : .string(words[3]),
                "this": .bool(words[4] == "this"), "label": .string(words[5] == "-" ? "" : words[5]),
            ]))
        }) { _ in exchange.respond(APIResponse.object(200, ["devices": .array(devices)])) }
    }
}
