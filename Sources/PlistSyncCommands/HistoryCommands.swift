import AgentKit
import Foundation
import SyncCore
import SyncProtocol

/// `plistsync conflicts|resolve|versions|restore|deletes`: see and settle conflict copies,
/// bring back versions the agent kept before a remote change replaced a file, and answer a held
/// mass delete.
enum HistoryCommand: VerbSubcommand {
    static let help = """
        OVERVIEW: See and settle conflicts; list and restore kept versions of a record.

        USAGE: plistsync conflicts [<collection>...] --dir DIR
               plistsync conflicts [<collection>...] [client options]
               plistsync resolve <collection>/<id> --keep mine|theirs|FILE --dir DIR
               plistsync versions <collection>/<id> --dir DIR
               plistsync restore <collection>/<id> [STAMP] --dir DIR
               plistsync restore BACKUP-FILE [--data DIR | --config F]   (a server backup:
                                 see `plistsync backup --help`)
               plistsync deletes <collection> --confirm|--undo --dir DIR

        A conflict copy (<id>.sync-conflict-<stamp>-<device>.plist) holds the version of a record
        that lost a field conflict; every mirror of the collection receives it. `resolve` keeps
        the record file as it is (theirs), the one conflict copy (mine), or any plist FILE as the
        record, and deletes the record's conflict copies everywhere. `restore` puts a kept
        version (the newest, or the one with STAMP) back; the file it replaces is kept too.
        When more files of one collection are deleted at once than the agent's
        --confirm-deletes-over allows, it holds the deletes (see `plistsync status`): `deletes
        --confirm` deletes them on the server, `--undo` writes the files back.
        The running agent of DIR sends these changes to the server.

        OPTIONS:
          --dir DIR            The mirrored folder.
          --keep CHOICE        (resolve) mine, theirs, or a plist file.
          --confirm, --undo    (deletes) What to do with the held deletes.
        \(ClientOptions.usage)
        """

    static func run(_ verb: String, _ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions.union(["dir", "keep"]), flagOptions: ClientOptions.flagOptions.union(["confirm", "undo"]))
        let words = options.positionals
        if verb == "conflicts", options.value("dir") == nil { return try listOnServer(words, options) }
        guard let dir = options.value("dir") else { throw UsageError("--dir is required") }
        let history = MirrorHistory(directory: dir)
        do {
            switch verb {
            case "conflicts":
                for copy in history.conflicts(in: words.isEmpty ? nil : words) {
                    Console.out("\(copy.collection)/\(copy.recordID)  \(copy.stamp)  \(copy.device)  \(copy.path)")
                }
            case "resolve":
                guard words.count == 1 else { throw UsageError("resolve needs <collection>/<id>") }
                let (collection, id) = try record(words[0])
                let choice: MirrorHistory.Choice = switch options.value("keep") {
                case "mine": .mine
                case "theirs": .theirs
                case let file?: .file(file)
                case nil: throw UsageError("--keep mine|theirs|FILE is required")
                }
                let removed = try history.resolve(collection, id, keep: choice)
                Console.out("resolved \(collection)/\(id): \(removed.count) conflict cop\(removed.count == 1 ? "y" : "ies") removed")
            case "versions":
                guard words.count == 1 else { throw UsageError("versions needs <collection>/<id>") }
                let (collection, id) = try record(words[0])
                for version in history.versions(collection, id) { Console.out("\(version.stamp)  \(version.path)") }
            case "restore":
                guard words.count == 1 || words.count == 2 else { throw UsageError("restore needs <collection>/<id> [STAMP]") }
                let (collection, id) = try record(words[0])
                let version = try history.restore(collection, id, stamp: words.count == 2 ? words[1] : nil)
                Console.out("restored \(collection)/\(id) from \(version.stamp)")
            case "deletes":
                guard words.count == 1, Names.isValidCollection(words[0]) else { throw UsageError("deletes needs <collection>") }
                guard options.flag("confirm") != options.flag("undo") else { throw UsageError("give --confirm or --undo") }
                let request: MassDeleteRequest = options.flag("confirm") ? .confirm : .undo
                try MassDeleteRequest.write(request, directory: dir, collection: words[0])
                Console.out("asked the agent of \(dir) to \(request == .confirm ? "delete the held records of \(words[0]) on the server" : "bring back the held deleted files of \(words[0])")")
            default:
                throw UsageError("unknown command \(verb)")
            }
        } catch let error as HistoryError {
            throw RuntimeError(error.description)
        }
    }

    /// `<collection>/<id>`, checked with the server's name rules.
    private static func record(_ text: String) throws -> (String, String) {
        guard let slash = text.firstIndex(of: "/") else { throw UsageError("name a record as <collection>/<id>") }
        let collection = String(text[..<slash])
        let id = String(text[text.index(after: slash)...])
        guard Names.isValidCollection(collection), Names.isValidRecordID(id) else { throw UsageError("not a record name: \(text)") }
        return (collection, id)
    }

    /// The conflict copies the server keeps for the given collections (every readable one when
    /// none is named): the companion `<collection>~conflicts` of each.
    private static func listOnServer(_ collections: [String], _ options: Arguments) throws {
        let client = try ClientOptions(options).client
        var names = collections
        if names.isEmpty {
            try client.run([.collections], onUntagged: { line in
                if let parsed = ServerLine.parseAnsweringTag(Array(line.utf8)), case .collection(let name, _, _) = ServerEvent(parsed) { names.append(name) }
            }, onReply: { _, _ in true })
        }
        var failure: String?
        try client.run(names.map { .list(collection: Names.conflictsCollection(of: $0)) }, onUntagged: { line in
            guard let parsed = try? ServerLine.parse(Array(line.utf8)), case .record(let collection, let id, _) = ServerEvent(parsed) else { return }
            Console.out("\(Names.collection(ofConflicts: collection) ?? collection)/\(id)")
        }, onReply: { line, event in
            if case .error = event { failure = line }
            return true
        })
        if let failure { throw RuntimeError(failure) }
    }
}
