import HTTPKit
import SyncProtocol

/// Collections and records: list, create, drop, rename; get, put, delete and move records with
/// their rev as the ETag; a collection's changes as an event stream.
extension HTTPAPI {
    func recordRoutes() -> [Route] {
        [
            Route(method: "GET", pattern: ["collections"], needsLogin: true) { exchange, _ in Self.listCollections(exchange) },
            Route(method: "POST", pattern: ["collections"], needsLogin: true) { exchange, _ in
                guard let body = exchange.jsonBody(), let name = exchange.requiredString(body, "name") else { return }
                exchange.run("CREATE \(ResponseLine.argument(name))") { _ in exchange.respond(APIResponse.object(201, ["name": .string(name)])) }
            },
            Route(method: "DELETE", pattern: ["collections", "*"], needsLogin: true) { exchange, path in
                exchange.run("DROP \(ResponseLine.argument(path[0]))") { _ in exchange.respond(APIResponse.noContent()) }
            },
            Route(method: "POST", pattern: ["collections", "*", "rename"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let to = exchange.requiredString(body, "to") else { return }
                exchange.run("RENAME \(ResponseLine.argument(path[0])) \(ResponseLine.argument(to))") { _ in
                    exchange.respond(APIResponse.object(200, ["name": .string(to)]))
                }
            },
            Route(method: "GET", pattern: ["collections", "*", "records"], needsLogin: true) { exchange, path in Self.listRecords(exchange, path[0]) },
            Route(method: "GET", pattern: ["collections", "*", "records", "*"], needsLogin: true) { exchange, path in
                Self.getRecord(exchange, path[0], path[1])
            },
            Route(method: "PUT", pattern: ["collections", "*", "records", "*"], needsLogin: true) { exchange, path in
                Self.putRecord(exchange, path[0], path[1])
            },
            Route(method: "DELETE", pattern: ["collections", "*", "records", "*"], needsLogin: true) { exchange, path in
                guard let rev = Self.baseRev(exchange, creating: false) else { return }
                Self.write(exchange, "DEL \(ResponseLine.argument(path[0])) \(ResponseLine.argument(path[1])) \(rev)")
            },
            Route(method: "POST", pattern: ["collections", "*", "records", "*", "move"], needsLogin: true) { exchange, path in
                Self.moveRecord(exchange, path[0], path[1])
            },
            Route(method: "GET", pattern: ["collections", "*", "events"], needsLogin: true) { exchange, path in
                EventStream.open(exchange, collection: path[0])
            },
        ]
    }

    static func listCollections(_ exchange: Exchange) {
        var collections: [Value] = []
        exchange.run("COLLECTIONS", listing: ["COLLECTION"], onLine: { line in
            guard line.words.count >= 4 else { return }
            collections.append(.dictionary(["name": .string(line.words[1]), "role": .string(line.words[2]), "seq": .integer(Int64(line.words[3]) ?? 0)]))
        }) { _ in
            exchange.respond(APIResponse.object(200, ["collections": .array(collections)]))
        }
    }

    /// The live records in order, streamed a page at a time as the client reads (chunked):
    /// `{"records": [...], "count": <all live records>, "seq": <current to>}`; `offset` and
    /// `limit` pick a page of them.
    static func listRecords(_ exchange: Exchange, _ collection: String) {
        let offset = Int(exchange.target.query["offset"] ?? "0") ?? -1
        let limit = exchange.target.query["limit"].map { Int($0) ?? -1 } ?? Int.max
        guard offset >= 0, limit >= 0 else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "offset and limit are whole numbers") }
        let connection = exchange.connection
        let keepAlive = exchange.request.keepAlive
        var started = false
        var index = 0
        var pending = ""
        func start() {
            guard !started else { return }
            started = true
            let head = HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json")] + APIResponse.apiHeaders)
            connection.write(head.head(keepAlive: keepAlive, chunked: true))
            pending = "{\"records\":["
        }
        exchange.bridge.request("LIST \(ResponseLine.argument(collection))", listing: ["RECORD"], onLine: { line in
            start()
            defer { index += 1 }
            guard index >= offset, index - offset < limit, let record = APIResponse.recordText(line, from: 2) else { return }
            if index > offset { pending += "," }
            pending += record
            if pending.utf8.count >= 32 << 10 {
                connection.write(HTTPResponse.chunk(pending))
                pending = ""
            }
        }) { reply in
            guard reply.isOK else {
                // Cut short after the head: the client sees an unfinished body.
                if started { return connection.streamEnded(keepAlive: false) }
                return exchange.respond(APIResponse.error(reply))
            }
            start()
            let count = reply.words.count > 3 ? reply.words[3] : "0"
            let seq = reply.words.count > 4 ? reply.words[4] : "0"
            pending += "],\"count\":\(Int64(count) ?? 0),\"seq\":\(Int64(seq) ?? 0)}\n"
            connection.write(HTTPResponse.chunk(pending) + HTTPResponse.lastChunk)
            connection.streamEnded(keepAlive: keepAlive)
        }
    }

    static func getRecord(_ exchange: Exchange, _ collection: String, _ id: String) {
        exchange.run("GET \(ResponseLine.argument(collection)) \(ResponseLine.argument(id))") { reply in
            guard let record = APIResponse.recordText(reply, from: 3) else { return exchange.fail(500, ErrorCode.internal.rawValue, "unreadable reply") }
            let tag = etag(reply.words[4])
            let deleted = reply.words[5] == "-"
            if !deleted, exchange.request.header("If-None-Match") == tag {
                return exchange.respond(HTTPResponse(status: 304, headers: APIResponse.apiHeaders + [HTTPHeader("ETag", tag)]))
            }
            exchange.respond(APIResponse.jsonText(deleted ? 404 : 200, record, headers: [HTTPHeader("ETag", tag)]))
        }
    }

    /// PUT with `If-Match: "<rev>"` replaces, with `If-None-Match: *` creates; the body is the
    /// record's fields.
    static func putRecord(_ exchange: Exchange, _ collection: String, _ id: String) {
        guard let rev = baseRev(exchange, creating: true), let fields = exchange.jsonBody() else { return }
        write(exchange, "PUT \(ResponseLine.argument(collection)) \(ResponseLine.argument(id)) \(rev) \(ValueJSON.encode(fields: fields))", created: rev == 0)
    }

    static func moveRecord(_ exchange: Exchange, _ collection: String, _ id: String) {
        guard let rev = baseRev(exchange, creating: false), let body = exchange.jsonBody(), let to = exchange.requiredString(body, "to") else { return }
        let placement: String
        switch to.lowercased() {
        case "first", "last": placement = to.uppercased()
        case "before", "after":
            guard let anchor = exchange.requiredString(body, "anchor") else { return }
            placement = "\(to.uppercased()) \(ResponseLine.argument(anchor))"
        default:
            return exchange.fail(400, ErrorCode.badRequest.rawValue, "\"to\" is first, last, before or after")
        }
        write(exchange, "MOVE \(ResponseLine.argument(collection)) \(ResponseLine.argument(id)) \(rev) \(placement)")
    }

    /// Runs a record write: `OK <verb> <c> <id> <rev> <seq>` answers the new rev (as the ETag)
    /// and seq; a stale rev answers 409 with the server's state as `current`.
    static func write(_ exchange: Exchange, _ line: String, created: Bool = false) {
        exchange.bridge.request(line) { reply in exchange.respond(writeResponse(reply, created: created)) }
    }

    static func writeResponse(_ reply: ServerLine, created: Bool = false) -> HTTPResponse {
        let words = reply.words
        if reply.isOK, words.count >= 6 {
            return APIResponse.object(
                created ? 201 : 200, ["id": .string(words[3]), "rev": .integer(Int64(words[4]) ?? 0), "seq": .integer(Int64(words[5]) ?? 0)],
                headers: [HTTPHeader("ETag", etag(words[4]))])
        }
        guard reply.errorCode == .conflict, words.count >= 6 else { return APIResponse.error(reply) }
        let missing = words.count > 6 && words[6] == "MISSING"
        let current = missing ? "{\"id\":\(ValueJSON.quoted(words[3])),\"missing\":true,\"rev\":0}" : APIResponse.recordText(reply, from: 3) ?? "{}"
        let message = missing ? "there is no such record to change" : "the record is at rev \(words[4]); the request's If-Match is stale"
        return APIResponse.jsonText(409, "{\"current\":\(current),\"error\":\"CONFLICT\",\"message\":\(ValueJSON.quoted(message))}")
    }

    /// The base rev a write names: `If-Match: "<rev>"`, or 0 for `If-None-Match: *` when
    /// creating; nil after answering 428/400.
    static func baseRev(_ exchange: Exchange, creating: Bool) -> Int64? {
        if let match = exchange.request.header("If-Match") {
            var text = Substring(match)
            if text.hasPrefix("W/") { text = text.dropFirst(2) }
            text = text.trimming("\" ")
            guard let rev = Int64(text), rev >= 0 else {
                exchange.fail(400, ErrorCode.badRequest.rawValue, "If-Match is a record's rev, as its ETag gives it (\"3\")")
                return nil
            }
            return rev
        }
        if creating, exchange.request.header("If-None-Match")?.trimming(" ") == "*" { return 0 }
        exchange.fail(428, "PRECONDITION_REQUIRED", creating
            ? "send If-Match: \"<rev>\" to change a record, or If-None-Match: * to create one"
            : "send If-Match: \"<rev>\" with the rev the change is based on")
        return nil
    }

    static func etag(_ rev: String) -> String { "\"\(rev)\"" }
}
