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
               plistsync grant <collection> <user> read|write|admin|none

        Without --rev, put/rm/mv first read the record's current revision (last writer wins);
        with it, a stale revision fails with the server's CONFLICT.

        OPTIONS:
        \(ClientOptions.usage)
          --rev N              Base revision for put, rm, mv.
          --since SEQ          (watch) Replay changes after SEQ first (default: only new ones).
        """

    static func run(_ verb: String, _ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions.union(["rev", "since"]), flagOptions: ClientOptions.flagOptions)
        let client = try ClientOptions(options).client
        let words = options.positionals
        func arg(_ text: String) -> String { ResponseLine.argument(text) }
        switch verb {
        case "ls":
            guard words.count <= 1 else { throw UsageError("ls takes at most a collection") }
            let request = words.isEmpty ? "COLLECTIONS" : "LIST \(words[0])"
            try expectOK(client, [request], printUntagged: true)
        case "get":
            guard words.count == 2 else { throw UsageError("get needs <collection> <id>") }
            try expectOK(client, ["GET \(words[0]) \(arg(words[1]))"]) { event in
                if case .ok(_, let reply, let payload) = event {
                    print(payload.map { ValueJSON.encode(fields: $0) } ?? "rev \(reply.count > 3 ? reply[3] : "?") DELETED")
                }
            }
        case "put":
            guard words.count == 2 || words.count == 3 else { throw UsageError("put needs <collection> <id> [<json>]") }
            let text = words.count == 3 ? words[2] : String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            let fields: Fields
            do {
                fields = try ValueJSON.decodeFields(Array(text.utf8))
            } catch {
                throw RuntimeError("the fields are not a JSON object: \(error.message)")
            }
            let rev = try baseRevision(client, options, words[0], words[1])
            try expectOK(client, ["PUT \(words[0]) \(arg(words[1])) \(rev) \(ValueJSON.encode(fields: fields))"], printReply: true)
        case "rm":
            guard words.count == 2 else { throw UsageError("rm needs <collection> <id>") }
            let rev = try baseRevision(client, options, words[0], words[1])
            try expectOK(client, ["DEL \(words[0]) \(arg(words[1])) \(rev)"], printReply: true)
        case "mv":
            guard words.count == 3 || words.count == 4 else { throw UsageError("mv needs <collection> <id> FIRST|LAST|BEFORE <id2>|AFTER <id2>") }
            let placement = words.count == 4 ? "\(words[2].uppercased()) \(arg(words[3]))" : words[2].uppercased()
            let rev = try baseRevision(client, options, words[0], words[1])
            try expectOK(client, ["MOVE \(words[0]) \(arg(words[1])) \(rev) \(placement)"], printReply: true)
        case "create":
            guard words.count == 1 else { throw UsageError("create needs <collection>") }
            try expectOK(client, ["CREATE \(words[0])"], printReply: true)
        case "grant":
            guard words.count == 3 else { throw UsageError("grant needs <collection> <user> <role>") }
            try expectOK(client, ["GRANT \(words[0]) \(arg(words[1])) \(words[2])"], printReply: true)
        case "watch":
            guard words.count == 1 else { throw UsageError("watch needs <collection>") }
            var since = options.value("since")
            if since == nil {
                try expectOK(client, ["LIST \(words[0])"]) { event in
                    if case .ok(_, let reply, _) = event { since = reply.last }
                }
            }
            // Unbuffered, so `watch | grep` sees each change as it happens.
            try client.run(["SUB \(words[0]) SINCE \(since ?? "0")"], stayOpen: true,
                           onUntagged: { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }, onReply: { line, event in
                if case .error = event {
                    FileHandle.standardError.write(Data("plistsync watch: \(line)\n".utf8))
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
        try client.run(["GET \(collection) \(ResponseLine.argument(id))"], onReply: { _, event in
            if case .ok(_, let words, _) = event, words.count >= 4 { rev = Int64(words[3]) ?? 0 }
            return true
        })
        return rev
    }

    /// Runs requests; fails with the server's words on the first ERR.
    private static func expectOK(
        _ client: ScriptClient, _ requests: [String], printUntagged: Bool = false, printReply: Bool = false,
        onOK: @escaping (ServerEvent) -> Void = { _ in }
    ) throws {
        var failure: String?
        try client.run(requests, onUntagged: { line in if printUntagged { print(line) } }, onReply: { line, event in
            if case .error = event {
                failure = String(line.dropFirst(2))
                return false
            }
            if printReply { print(String(line.dropFirst(5))) }
            onOK(event)
            return true
        })
        if let failure { throw RuntimeError(failure) }
    }
}
