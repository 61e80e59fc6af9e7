import AgentKit
import Foundation
import SyncCore
import SyncProtocol

/// `plistsync ls|get|put|rm|mv|watch|create|grant`: a scripting client over the protocol.
enum ScriptCommand: VerbSubcommand {
    static let help = """
        OVERVIEW: Read and change records from scripts (a client of the wire protocol).

        USAGE: plistsync ls [<collection>] [client options]
               plistsync get <collection> <id>
               plistsync put <collection> <id> [<json>] [--rev N]     (fields from stdin when <json> is left out)
               plistsync rm <collection> <id> [--rev N]
               plistsync mv <collection> <id> FIRST|LAST|BEFORE <id2>|AFTER <id2> [--rev N]
               plistsync watch <collection> [--since SEQ]
               plistsync create <collection>
               plistsync rename <collection> <new-name>
               plistsync drop <collection> --yes
               plistsync grant <collection> <user> read|write|admin|none

        Without --rev, put/rm/mv first read the record's current revision (last writer wins);
        with it, a stale revision fails with the server's CONFLICT.

        OPTIONS:
        \(ClientOptions.usage)
          --rev N              Base revision for put, rm, mv.
          --json               Print JSON for scripts (ls: an array; get: the fields; put, rm,
                               mv: {collection, id, rev, seq}) instead of lines for people.
          --since SEQ          (watch) Replay changes after SEQ first (default: only new ones).
          --yes                (drop) Really delete the collection and its records for everyone.
        """

    static func run(_ verb: String, _ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions.union(["rev", "since"]),
                                    flagOptions: ClientOptions.flagOptions.union(["json", "yes"]))
        let client = try ClientOptions(options).client
        let words = options.positionals
        switch verb {
        case "ls":
            guard words.count <= 1 else { throw UsageError("ls takes at most a collection") }
            var rows: [[String]] = []
            var json: [Value] = []
            try expectOK(client, [words.isEmpty ? .collections : .list(collection: words[0])], onUntagged: { line in
                guard let parsed = ServerLine.parseAnsweringTag(Array(line.utf8)) else { return }
                let w = parsed.words
                if w.first == "COLLECTION", w.count >= 4 {
                    rows.append([w[1], w[2], w[3]])
                    json.append(.dictionary(["name": .string(w[1]), "role": .string(w[2]), "seq": .integer(Int64(w[3]) ?? 0)]))
                } else if w.first == "RECORD", w.count >= 4 {
                    let fields = parsed.payload ?? [:]
                    rows.append([w[2], w[3], Self.readable(fields)])
                    json.append(.dictionary(["id": .string(w[2]), "rev": .integer(Int64(w[3]) ?? 0), "fields": .dictionary(fields)]))
                }
            })
            if options.flag("json") { return Console.out(ValueJSON.encode(.array(json))) }
            Self.printTable(words.isEmpty ? ["COLLECTION", "ROLE", "SEQ"] : ["ID", "REV", "FIELDS"], rows)
        case "get":
            guard words.count == 2 else { throw UsageError("get needs <collection> <id>") }
            try expectOK(client, [.get(collection: words[0], id: words[1])], onOK: { event in
                guard case .ok(_, let reply, let payload) = event else { return }
                let rev = if case .record(_, _, let rev, _) = reply { rev } else { Int64(0) }
                if options.flag("json") {
                    return Console.out(payload.map { ValueJSON.encode(fields: $0) } ?? ValueJSON.encode(.dictionary(["deleted": .bool(true), "rev": .integer(rev)])))
                }
                guard let payload else { return Console.out("\(words[0])/\(words[1]) was deleted (rev \(rev))") }
                Console.out("\(words[0])/\(words[1])  rev \(rev)")
                let width = payload.keys.map(\.count).max() ?? 0
                for key in payload.keys.sorted() {
                    Console.out("  " + key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Self.readable(payload[key]!))
                }
            })
        case "put":
            guard words.count == 2 || words.count == 3 else { throw UsageError("put needs <collection> <id> [<json>]") }
            let text = words.count == 3 ? words[2] : String(decoding: Console.readAll(), as: UTF8.self)
            let fields: Fields
            do {
                fields = try ValueJSON.decodeFields(Array(text.utf8))
            } catch {
                throw RuntimeError("the fields are not a JSON object: \(error.message)")
            }
            let rev = try baseRevision(client, options, words[0], words[1])
            try expectOK(client, [.put(collection: words[0], id: words[1], baseRev: rev, fieldsJSON: ValueJSON.encode(fields: fields))], report: options.flag("json"))
        case "rm":
            guard words.count == 2 else { throw UsageError("rm needs <collection> <id>") }
            let rev = try baseRevision(client, options, words[0], words[1])
            try expectOK(client, [.delete(collection: words[0], id: words[1], baseRev: rev)], report: options.flag("json"))
        case "mv":
            guard words.count == 3 || words.count == 4 else { throw UsageError("mv needs <collection> <id> FIRST|LAST|BEFORE <id2>|AFTER <id2>") }
            let placement: Placement
            switch (words[2].uppercased(), words.count) {
            case ("FIRST", 3): placement = .first
            case ("LAST", 3): placement = .last
            case ("BEFORE", 4): placement = .before(words[3])
            case ("AFTER", 4): placement = .after(words[3])
            default: throw UsageError("mv needs FIRST, LAST, BEFORE <id2> or AFTER <id2>")
            }
            let rev = try baseRevision(client, options, words[0], words[1])
            try expectOK(client, [.move(collection: words[0], id: words[1], baseRev: rev, placement: placement)], report: options.flag("json"))
        case "create":
            guard words.count == 1 else { throw UsageError("create needs <collection>") }
            try expectOK(client, [.create(collection: words[0])], report: options.flag("json"))
        case "drop":
            guard words.count == 1 else { throw UsageError("drop needs <collection>") }
            guard options.flag("yes") else {
                throw UsageError("drop deletes \(words[0]) and every record in it for everyone; add --yes if that is what you want")
            }
            try expectOK(client, [.drop(collection: words[0])], report: options.flag("json"))
        case "rename":
            guard words.count == 2 else { throw UsageError("rename needs <collection> <new-name>") }
            try expectOK(client, [.rename(from: words[0], to: words[1])], report: options.flag("json"))
        case "grant":
            guard words.count == 3 else { throw UsageError("grant needs <collection> <user> <role>") }
            let role = Role(name: words[2].lowercased())
            guard role != nil || words[2].lowercased() == "none" else { throw UsageError("the role is read, write, admin or none") }
            // The reply is a bare OK GRANT: say what was granted.
            let said = switch role {
            case .read?: "\(words[1]) may now read \(words[0])"
            case .write?: "\(words[1]) may now read and write \(words[0])"
            case .admin?: "\(words[1]) may now administer \(words[0])"
            case nil: "\(words[1]) no longer has access to \(words[0])"
            }
            let json = ValueJSON.encode(.dictionary(["collection": .string(words[0]), "user": .string(words[1]), "role": .string(role?.name ?? "none")]))
            try expectOK(client, [.grant(collection: words[0], user: words[1], role: role)], onOK: { _ in Console.out(options.flag("json") ? json : said) })
        case "watch":
            guard words.count == 1 else { throw UsageError("watch needs <collection>") }
            var since = try options.value("since").map { text -> String in
                guard Int64(text).map({ $0 >= 0 }) == true else { throw UsageError("--since must be a seq (a non-negative integer)") }
                return text
            }
            if since == nil {
                try expectOK(client, [.list(collection: words[0])], onOK: { event in
                    if case .ok(_, .listed(_, _, let seq), _) = event { since = String(seq) }
                })
            }
            // Unbuffered, so `watch | grep` sees each change as it happens.
            try client.run([.subscribe(collection: words[0], since: since.flatMap { Int64($0) } ?? 0)], stayOpen: true,
                           onUntagged: { Console.write(Array(($0 + "\n").utf8)) }, onReply: { line, event in
                if case .error = event {
                    Console.error("plistsync watch: \(line)\n")
                    return false
                }
                return true
            })
        default:
            throw UsageError("unknown command \(verb)")
        }
    }

    /// The record's current rev from --rev, or read from the server (0 when it does not exist).
    private static func baseRevision(_ client: ScriptClient, _ options: Arguments, _ collection: String, _ id: String) throws -> Int64 {
        if let text = options.value("rev") {
            guard let rev = Int64(text), rev >= 0 else { throw UsageError("--rev must be a non-negative integer") }
            return rev
        }
        var rev: Int64 = 0
        try client.run([.get(collection: collection, id: id)], onReply: { _, event in
            if case .ok(_, .record(_, _, let current, _), _) = event { rev = current }
            return true
        })
        return rev
    }

    /// Runs requests; fails with the server's words on the first ERR. With `report`, each OK is
    /// printed: in words (`put contacts/Ada: rev 2, seq 7`), or as JSON when `json`.
    static func expectOK(
        _ client: ScriptClient, _ requests: [Command], report: Bool? = nil,
        onUntagged: @escaping (String) -> Void = { _ in }, onOK: @escaping (ServerEvent) -> Void = { _ in }
    ) throws {
        var failure: String?
        try client.run(requests, onUntagged: onUntagged, onReply: { line, event in
            if case .error = event {
                failure = String(line.dropFirst(2))
                return false
            }
            if let json = report, case .ok(_, let reply, _) = event { Console.out(describe(reply, json: json)) }
            onOK(event)
            return true
        })
        if let failure { throw RuntimeError(failure) }
    }

    /// An OK reply (`PUT contacts Ada 2 7`) for a person or a script.
    private static func describe(_ reply: Reply, json: Bool) -> String {
        switch reply {
        case .written(let verb, let collection, let id, let rev, let seq):
            if json {
                return ValueJSON.encode(.dictionary(["collection": .string(collection), "id": .string(id), "rev": .integer(rev), "seq": .integer(seq)]))
            }
            let action = switch verb {
            case .put: "saved"
            case .delete: "deleted"
            case .move: "moved"
            }
            return "\(action) \(collection)/\(id): rev \(rev), seq \(seq)"
        case .created(let name):
            return json ? ValueJSON.encode(.dictionary(["created": .string(name)])) : "created \(name)"
        case .dropped(let name):
            return json ? ValueJSON.encode(.dictionary(["dropped": .string(name)])) : "dropped \(name)"
        case .renamed(let from, let to):
            return json ? ValueJSON.encode(.dictionary(["renamed": .string(from), "to": .string(to)])) : "renamed \(from) to \(to)"
        default:
            let words = reply.words.joined(separator: " ")
            return json ? ValueJSON.encode(.dictionary(["ok": .string(words)])) : words
        }
    }

    /// A field value as a person reads it: text bare, anything else as JSON.
    static func readable(_ value: Value) -> String {
        if case .string(let text) = value { return text }
        return ValueJSON.encode(value)
    }

    /// A record's fields on one line: `name=Ada phone=555-0100`.
    static func readable(_ fields: Fields) -> String {
        fields.keys.sorted().map { "\($0)=\(readable(fields[$0]!))" }.joined(separator: " ")
    }

    /// Rows under a header, columns padded (the last one is not).
    static func printTable(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        for row in all {
            Console.out(row.indices.map { $0 == row.count - 1 ? row[$0] : row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
    }
}
