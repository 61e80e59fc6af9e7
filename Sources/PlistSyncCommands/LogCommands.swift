import AgentKit
import Foundation
import SyncCore
import SyncProtocol

/// `plistsync log|revert`: a collection's change log (who changed what, when) and taking
/// changes back, over the wire (LOG, REVERT).
enum LogCommand: VerbSubcommand {
    static let help = """
        OVERVIEW: See who changed a collection, and take changes back.

        USAGE: plistsync log <collection> [--since SEQ] [--by USER | --device ID] [--limit N] [--json]
               plistsync revert <collection> --to SEQ [--by USER | --device ID] [--dry-run] [--json]

        `log` prints the latest changes (100 unless --limit; with --since, the first after SEQ),
        oldest first: seq, time, who (user, device, front), the record and what it became.
        `revert` writes every record changed after SEQ (of one user or device, with --by or
        --device: a lost laptop's token id, as `plistsync devices` shows it) back to how it
        stood, as new revisions everyone receives; a record someone else changed since is kept
        and named. --dry-run only prints what it would write. Run a revert cut short again to
        finish it.

        OPTIONS:
        \(ClientOptions.usage)
          --since SEQ          (log) Changes after SEQ.
          --to SEQ             (revert) Back to how the collection stood after SEQ.
          --by USER            Only this user's changes.
          --device ID          Only this device's (a token id, or `password`).
          --limit N            (log) At most N changes (1–1000).
          --dry-run            (revert) Say what would be written; write nothing.
          --json               Print JSON for scripts.
        """

    static func run(_ verb: String, _ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions.union(["since", "to", "by", "device", "limit"]),
                                    flagOptions: ClientOptions.flagOptions.union(["json", "dry-run"]))
        guard options.positionals.count == 1 else { throw UsageError("\(verb) needs one <collection>") }
        let collection = options.positionals[0]
        let author: LogQuery.Author? = switch (options.value("by"), options.value("device")) {
        case (nil, nil): nil
        case (let name?, nil): .user(name)
        case (nil, let id?): .device(id)
        default: throw UsageError("--by and --device cannot be given together")
        }
        let client = try ClientOptions(options).client
        let json = options.flag("json")
        var rows: [[String]] = []
        var values: [Value] = []
        let command: Command
        if verb == "log" {
            let since = try options.value("since").map { text throws in try seq(text, "--since") }
            let limit = try options.integer("limit", default: LogQuery.defaultLimit, range: 1...LogQuery.maxLimit)
            command = .log(collection: collection, query: LogQuery(since: since, author: author, limit: limit))
        } else {
            guard let to = options.value("to") else { throw UsageError("revert needs --to SEQ") }
            command = .revert(collection: collection, toSeq: try seq(to, "--to"), author: author, dryRun: options.flag("dry-run"))
        }
        var summary = ""
        try ScriptCommand.expectOK(client, [command], onUntagged: { line in
            guard let parsed = ServerLine.parseAnsweringTag(Array(line.utf8)) else { return }
            let (row, value) = describe(parsed.words, parsed.payload)
            if let row { rows.append(row) }
            if let value { values.append(value) }
        }, onOK: { event in
            guard case .ok(_, .reverted(_, let written, let kept, let dryRun), _) = event else { return }
            summary = dryRun ? "would write \(written) record(s); \(kept) changed since by others, kept"
                : "wrote \(written) record(s); \(kept) changed since by others, kept"
        })
        if json { return Console.out(ValueJSON.encode(.array(values))) }
        if verb == "log" {
            ScriptCommand.printTable(["SEQ", "TIME", "USER", "DEVICE", "VIA", "ID", "REV", "NOW"], rows)
        } else {
            ScriptCommand.printTable(["", "ID", "REV", "TO"], rows)
            Console.out(summary)
        }
    }

    private static func seq(_ text: String, _ option: String) throws -> Int64 {
        guard let seq = Int64(text), seq >= 0 else { throw UsageError("\(option) takes a seq, a whole number from 0") }
        return seq
    }

    /// A LOG, REVERT or KEPT line as a table row and a JSON value.
    private static func describe(_ words: [String], _ payload: Fields?) -> (row: [String]?, value: Value?) {
        let now = payload.map(ScriptCommand.readable) ?? "(deleted)"
        switch words.first {
        case "LOG" where words.count >= 11:
            let device = words[6] == "-" ? words[5] : "\(words[5]) (\(words[6]))"
            var value: Fields = ["seq": .integer(Int64(words[2]) ?? 0), "time": .string(words[3]), "user": .string(words[4]), "device": .string(words[5]),
                                 "via": .string(words[7]), "id": .string(words[8]), "rev": .integer(Int64(words[9]) ?? 0)]
            if words[6] != "-" { value["label"] = .string(words[6]) }
            value[payload == nil ? "deleted" : "fields"] = payload.map(Value.dictionary) ?? .bool(true)
            return ([words[2], words[3], words[4], device, words[7], words[8], words[9], now], .dictionary(value))
        case "REVERT" where words.count >= 4:
            var value: Fields = ["id": .string(words[2]), "rev": .integer(Int64(words[3]) ?? 0)]
            value[payload == nil ? "deleted" : "fields"] = payload.map(Value.dictionary) ?? .bool(true)
            return (["revert", words[2], words[3], now], .dictionary(value))
        case "KEPT" where words.count >= 8:
            return (["kept", words[2], words[3], "changed since by \(words[4]) on \(words[6] == "-" ? words[5] : words[6])"],
                    .dictionary(["id": .string(words[2]), "rev": .integer(Int64(words[3]) ?? 0), "kept": .bool(true), "changed_by": .string(words[4])]))
        default:
            return (nil, nil)
        }
    }
}
