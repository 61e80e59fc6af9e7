import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// Collections and records: list, create, drop, rename; get, put, delete and move records with
/// their rev as the ETag; a collection's changes as an event stream.
extension HTTPAPI {
    func recordRoutes() -> [Route] {
        [
            Route(method: "GET", pattern: ["collections"], needsLogin: true) { exchange, _ in Self.listCollections(exchange) },
            Route(method: "POST", pattern: ["collections"], needsLogin: true) { exchange, _ in
                guard let body = exchange.jsonBody(), let name = exchange.requiredString(body, "name") else { return }
                exchange.run(.create(collection: name)) { _, _ in
                    exchange.respond(APIResponse.object(201, ["name": .string(name)], headers: [Self.location("collections", name)]))
                }
            },
            Route(method: "DELETE", pattern: ["collections", "*"], needsLogin: true) { exchange, path in
                exchange.run(.drop(collection: path[0])) { _, _ in exchange.respond(APIResponse.noContent()) }
            },
            Route(method: "POST", pattern: ["collections", "*", "rename"], needsLogin: true) { exchange, path in
                guard let body = exchange.jsonBody(), let to = exchange.requiredString(body, "to") else { return }
                exchange.run(.rename(from: path[0], to: to)) { _, _ in exchange.respond(APIResponse.object(200, ["name": .string(to)])) }
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
                Self.write(exchange, .delete(collection: path[0], id: path[1], baseRev: rev))
            },
            Route(method: "GET", pattern: ["collections", "*", "records", "*", "versions"], needsLogin: true) { exchange, path in
                Self.listVersions(exchange, path[0], path[1])
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
        exchange.run(.collections, collecting: { if case .collection = $0 { true } else { false } }, onNotice: { notice in
            guard case .collection(let name, let role, let seq) = notice else { return }
            collections.append(.dictionary(["name": .string(name), "role": .string(role?.name ?? "none"), "seq": .integer(seq)]))
        }) { _, _ in
            exchange.respond(APIResponse.object(200, ["collections": .array(collections)]))
        }
    }

    /// The live records in order, streamed as the client reads (chunked). Without paging:
    /// the whole listing, one snapshot, `{"records": [...], "count": <all>, "seq": <current to>}`.
    /// With `limit` (and `after`, the `next` of the page before, or `offset`): pages read by the
    /// order's index (LIST … AFTER … LIMIT), `{"records": [...], "seq": …, "next": <cursor or
    /// null>}`; a page costs its own records, not the collection's.
    static func listRecords(_ exchange: Exchange, _ collection: String) {
        let query = exchange.target.query
        var at: Int64?
        if let text = query["at"] {
            guard let seq = Int64(text), seq >= 0 else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "at is a seq: a whole number from 0") }
            at = seq
        }
        guard query["limit"] != nil || query["after"] != nil || query["offset"] != nil else {
            return listAll(exchange, at.map { .listAt(collection: collection, seq: $0) } ?? .list(collection: collection))
        }
        let offset = Int(query["offset"] ?? "0") ?? -1
        let limit = query["limit"].map { Int($0) ?? -1 } ?? Int.max
        guard offset >= 0 else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "offset is a whole number") }
        guard at == nil || offset == 0 else {
            return exchange.fail(400, ErrorCode.badRequest.rawValue, "offset cannot be used with at (each page rebuilds the list); page with after")
        }
        // A page of none would answer `next: null`, which tells a pager the list has ended.
        guard limit >= 1 else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "limit is a whole number from 1 (LIST … LIMIT 0 is refused too)") }
        var cursor: RecordCursor?
        if let after = query["after"] {
            guard let dot = after.firstIndex(of: "."), dot != after.startIndex else {
                return exchange.fail(400, ErrorCode.badRequest.rawValue, "after is the \"next\" of the page before: <position>.<id>")
            }
            cursor = RecordCursor(position: String(after[..<dot]), id: String(after[after.index(after: dot)...]))
        }
        RecordPages(exchange: exchange, collection: collection, at: at, after: cursor, skip: offset, limit: limit).next()
    }

    /// The whole listing as one snapshot (LIST, or LIST AT a seq).
    static func listAll(_ exchange: Exchange, _ command: Command) {
        let connection = exchange.connection
        let keepAlive = exchange.request.keepAlive
        var started = false
        var pending = ""
        func start() {
            guard !started else { return }
            started = true
            connection.writeHead(HTTPResponse(status: 200, headers: APIResponse.jsonHeaders))
            pending = "{\"records\":["
        }
        var first = true
        exchange.bridge.request(command, collecting: { if case .record = $0 { true } else { false } }, onNotice: { notice in
            guard case .record(_, let state) = notice else { return }
            start()
            if !first { pending += "," }
            first = false
            pending += APIResponse.recordJSON(state)
            if pending.utf8.count >= 32 << 10 {
                connection.writeBody(HTTPResponse.chunk(pending))
                pending = ""
            }
        }) { answer in
            guard case .ok(.listed(_, let count, let seq), _) = answer else {
                // Cut short after the head: the client sees an unfinished body.
                if started { return connection.streamEnded(keepAlive: false) }
                return exchange.respond(APIResponse.response(for: answer))
            }
            start()
            pending += "],\"count\":\(count),\"seq\":\(seq)}\n"
            connection.writeBody(HTTPResponse.chunk(pending) + HTTPResponse.lastChunk)
            connection.streamEnded(keepAlive: keepAlive)
        }
    }

    /// A record's kept earlier versions, newest first: `{"versions":[{"fields","replaced","rev"}…]}`.
    static func listVersions(_ exchange: Exchange, _ collection: String, _ id: String) {
        var versions: [String] = []
        exchange.run(.versions(collection: collection, id: id), collecting: { if case .version = $0 { true } else { false } }, onNotice: { notice in
            guard case .version(_, _, let version) = notice else { return }
            versions.append(#"{"fields":\#(version.fieldsJSON),"replaced":\#(ValueJSON.quoted(ServerNotice.time(version.replacedAt))),"replaced_by":\#(authorJSON(version.replacedBy)),"rev":\#(version.rev)}"#)
        }) { _, _ in exchange.respond(APIResponse.jsonText(200, #"{"versions":[\#(versions.joined(separator: ","))]}"#)) }
    }

    static func getRecord(_ exchange: Exchange, _ collection: String, _ id: String) {
        exchange.run(.get(collection: collection, id: id)) { reply, payload in
            guard case .record(_, let id, let rev, let position) = reply else { return exchange.respond(APIResponse.unexpected) }
            let tag = etag(rev)
            let state = RecordState(id: id, rev: rev, body: position.map { .live(position: $0, fieldsJSON: payload ?? "{}") } ?? .deleted)
            if position != nil, exchange.request.header("If-None-Match") == tag {
                return exchange.respond(HTTPResponse(status: 304, headers: APIResponse.apiHeaders + [HTTPHeader("ETag", tag)]))
            }
            var body: [UInt8] = []
            APIResponse.writeRecord(state, into: &body)
            body.append(0x0A)
            exchange.respond(HTTPResponse(status: position == nil ? 404 : 200, headers: APIResponse.jsonHeaders + [HTTPHeader("ETag", tag)], body: body))
        }
    }

    /// PUT with `If-Match: "<rev>"` replaces, with `If-None-Match: *` creates; the body is the
    /// record's fields.
    static func putRecord(_ exchange: Exchange, _ collection: String, _ id: String) {
        guard let rev = baseRev(exchange, creating: true), let fields = exchange.jsonBody() else { return }
        write(exchange, .put(collection: collection, id: id, baseRev: rev, fieldsJSON: ValueJSON.encode(fields: fields)), created: rev == 0)
    }

    static func moveRecord(_ exchange: Exchange, _ collection: String, _ id: String) {
        guard let rev = baseRev(exchange, creating: false), let body = exchange.jsonBody(), let to = exchange.requiredString(body, "to") else { return }
        let placement: Placement
        switch to.lowercased() {
        case "first": placement = .first
        case "last": placement = .last
        case "before", "after":
            guard let anchor = exchange.requiredString(body, "anchor") else { return }
            placement = to.lowercased() == "before" ? .before(anchor) : .after(anchor)
        default:
            return exchange.fail(400, ErrorCode.badRequest.rawValue, "\"to\" is first, last, before or after")
        }
        write(exchange, .move(collection: collection, id: id, baseRev: rev, placement: placement))
    }

    /// Runs a record write: its new rev (as the ETag) and seq; a stale rev answers 409 with the
    /// server's state as `current`.
    static func write(_ exchange: Exchange, _ command: Command, created: Bool = false) {
        exchange.run(command, creating: created) { reply, _ in
            guard case .written(_, let collection, let id, let rev, let seq) = reply else { return exchange.respond(APIResponse.unexpected) }
            // A 201 names what it made (RFC 9110 §9.3.3 / §15.3.2).
            let location = created ? [location("collections", collection, "records", id)] : []
            exchange.respond(APIResponse.object(
                created ? 201 : 200, ["id": .string(id), "rev": .integer(rev), "seq": .integer(seq)], headers: [HTTPHeader("ETag", etag(rev))] + location))
        }
    }

    /// `Location: /api/<segments>`, each segment percent-encoded.
    static func location(_ segments: String...) -> HTTPHeader {
        HTTPHeader("Location", "/api/" + segments.map(HTTPTarget.percentEncoded).joined(separator: "/"))
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

    static func etag(_ rev: Int64) -> String { "\"\(rev)\"" }
}
