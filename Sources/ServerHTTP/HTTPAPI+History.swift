import HTTPKit
import ServerKit
import SyncCore
import SyncProtocol

/// The change log over HTTP: a collection's activity (LOG) and REVERT; the list as it was is
/// `GET …/records?at=<seq>` (LIST AT) and a record's history `…/versions` (VERSIONS).
extension HTTPAPI {
    func historyRoutes() -> [Route] {
        [
            Route(method: "GET", pattern: ["collections", "*", "log"], needsLogin: true) { exchange, path in Self.log(exchange, path[0]) },
            Route(method: "POST", pattern: ["collections", "*", "revert"], needsLogin: true) { exchange, path in Self.revert(exchange, path[0]) },
        ]
    }

    /// `{"changes":[{"seq","time","by":{…},"id","rev","position","fields"}|{…,"deleted":true}…],"count"}`,
    /// in seq order; `since`, `by` or `device`, and `limit` as LOG takes them.
    static func log(_ exchange: Exchange, _ collection: String) {
        let query = exchange.target.query
        var since: Int64?
        if let text = query["since"] {
            guard let seq = Int64(text), seq >= 0 else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "since is a seq: a whole number from 0") }
            since = seq
        }
        let limit = query["limit"].map { Int($0) ?? -1 } ?? LogQuery.defaultLimit
        guard let author = author(exchange, by: query["by"], device: query["device"]) else { return }
        var changes: [String] = []
        exchange.run(.log(collection: collection, query: LogQuery(since: since, author: author, limit: limit)),
                     collecting: { if case .logged = $0 { true } else { false } }, onNotice: { notice in
            guard case .logged(let change) = notice else { return }
            changes.append(changeJSON(change))
        }) { _, _ in
            exchange.respond(APIResponse.jsonText(200, #"{"changes":[\#(changes.joined(separator: ","))],"count":\#(changes.count)}"#))
        }
    }

    /// Body `{"to": <seq>, "by": <user> | "device": <id>, "dry_run": bool}`; answers
    /// `{"written","kept","dry_run","records":[states written],"kept_records":[{"id","rev","changed_by"}]}`.
    static func revert(_ exchange: Exchange, _ collection: String) {
        guard let body = exchange.jsonBody() else { return }
        guard case .integer(let to)? = body["to"], to >= 0 else { return exchange.fail(400, ErrorCode.badRequest.rawValue, "the body needs \"to\": a seq") }
        var names: [String: String] = [:]
        for key in ["by", "device"] {
            switch body[key] {
            case nil: continue
            case .string(let text)?: names[key] = text
            default: return exchange.fail(400, ErrorCode.badRequest.rawValue, "\"\(key)\" is a string")
            }
        }
        guard let author = author(exchange, by: names["by"], device: names["device"]) else { return }
        let dryRun = body["dry_run"] == .bool(true)
        var written: [String] = []
        var kept: [String] = []
        exchange.run(.revert(collection: collection, toSeq: to, author: author, dryRun: dryRun), collecting: { notice in
            switch notice {
            case .revertStep, .revertKept: true
            default: false
            }
        }, onNotice: { notice in
            switch notice {
            case .revertStep(_, let state): written.append(APIResponse.recordJSON(state))
            case .revertKept(_, let id, let rev, let by): kept.append(#"{"changed_by":\#(authorJSON(by)),"id":\#(ValueJSON.quoted(id)),"rev":\#(rev)}"#)
            default: break
            }
        }) { _, _ in
            exchange.respond(APIResponse.jsonText(200, #"{"dry_run":\#(dryRun),"kept":\#(kept.count),"kept_records":[\#(kept.joined(separator: ","))],"#
                + #""records":[\#(written.joined(separator: ","))],"written":\#(written.count)}"#))
        }
    }

    /// BY or DEVICE from a query or body: nil (and answered 400) when both are given.
    private static func author(_ exchange: Exchange, by user: String?, device: String?) -> LogQuery.Author?? {
        switch (user, device) {
        case (nil, nil): return .some(nil)
        case (let name?, nil): return .some(.user(name))
        case (nil, let id?): return .some(.device(id))
        default:
            exchange.fail(400, ErrorCode.badRequest.rawValue, "by and device cannot be given together")
            return nil
        }
    }

    /// A logged change: its record's state, with its seq, time and author.
    static func changeJSON(_ change: LoggedChange) -> String {
        let state = APIResponse.recordJSON(change.state)
        return #"{"by":\#(authorJSON(change.author)),"seq":\#(change.seq),"time":\#(ValueJSON.quoted(ServerNotice.time(change.at))),"#
            + String(state.dropFirst())
    }

    /// `{"device","label","user","via"}` (label null when the token had none).
    static func authorJSON(_ author: LoggedAuthor) -> String {
        #"{"device":\#(ValueJSON.quoted(author.device)),"label":\#(author.deviceLabel.map(ValueJSON.quoted) ?? "null"),"#
            + #""user":\#(ValueJSON.quoted(author.user)),"via":\#(ValueJSON.quoted(author.via))}"#
    }
}
