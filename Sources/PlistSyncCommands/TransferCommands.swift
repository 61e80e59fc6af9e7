import AgentKit
import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// `plistsync import|export`: moves a whole collection into or out of the server as one plist
/// whose root is an array of dictionaries (the file an app keeps its list in).
enum TransferCommand: VerbSubcommand {
    static let help = """
        OVERVIEW: Import a plist array of records into a collection, or export a collection as one.

        USAGE: plistsync attach FILE --collection C --id-key KEY --dir DIR
                                  [--format xml|binary|archive] [--class NAME] [--root-key KEY]
               plistsync import FILE --collection C [--id-key KEY] [client options]
               plistsync export C [--format xml|binary|archive] [--class NAME] [--root-key KEY]
                                  [--id-key KEY] [-o FILE] [client options]

        attach: the agent of DIR mirrors FILE (at the top of DIR) as collection C from its next
        start: each save of the file sends the elements that changed, field by field, and changes
        from others are written into the file in its own format (XML, binary or keyed archive).
        When FILE is not in DIR yet, the agent writes it as --format says (default: a keyed
        archive for *.archive, else XML) until the app saves it there.
        import: each element (a dictionary, or an object of an NSKeyedArchiver archive whose root
        is an array) becomes a record, in the file's order. With --id-key,
        the element's value of KEY (a string or an integer) is the record id: importing the file
        again updates those records. Without it every element gets a new random id. The collection
        is created when it does not exist.
        export: the collection's records in order, as XML (default), binary, or a keyed archive
        (elements of class NAME, or NSDictionary without --class; the root under KEY, default
        "root"); with --id-key each element carries its record id under KEY. Written atomically
        to FILE, or to stdout.

        OPTIONS:
          --collection C       (attach, import) The collection.
          --dir DIR            (attach) The mirrored folder.
          --id-key KEY         The field that holds the record id.
          --format F           (export, attach) xml, binary or archive.
          --class NAME         (archive) The elements' class name (default: NSDictionary).
          --root-key KEY       (archive) The archive's root key (default root).
          -o, --output FILE    (export) Where to write (default: stdout).
        \(ClientOptions.usage)
        """

    static func run(_ verb: String, _ arguments: [String]) throws {
        let renamed = arguments.map { $0 == "-o" ? "--output" : $0 }
        let options = try Arguments(
            renamed, valueOptions: ClientOptions.valueOptions.union(["collection", "id-key", "format", "output", "class", "root-key", "dir"]), flagOptions: ClientOptions.flagOptions)
        let words = options.positionals
        switch verb {
        case "attach":
            guard words.count == 1 else { throw UsageError("attach needs one FILE") }
            guard let dir = options.value("dir") else { throw UsageError("--dir is required") }
            guard let collection = options.value("collection"), let idKey = options.value("id-key") else {
                throw UsageError("--collection and --id-key are required")
            }
            let root = URL(fileURLWithPath: dir).standardizedFileURL.path
            let file = URL(fileURLWithPath: words[0]).standardizedFileURL
            guard file.deletingLastPathComponent().path == root || !words[0].contains("/") else {
                throw UsageError("the file must be at the top of \(dir)")
            }
            // The file's own format when it is here already; else the one given, for an agent
            // that writes the file before the app has made it on this machine.
            var kind = try writtenKind(options)
            if let bytes = FileManager.default.contents(atPath: root + "/" + file.lastPathComponent) {
                do {
                    kind = try CollectionFile.entries(Array(bytes), idKey: idKey, newID: { "" }).kind
                } catch {
                    throw RuntimeError("cannot attach \(file.lastPathComponent): \(error)")
                }
            }
            do {
                try AttachedFiles.attach(AttachedFile(name: file.lastPathComponent, collection: collection, idKey: idKey, kind: kind), directory: root)
            } catch {
                throw RuntimeError(error.description)
            }
            Console.out("\(file.lastPathComponent) will be mirrored as \(collection) by the agent of \(root) (restart it if it runs)")
        case "import":
            guard words.count == 1 else { throw UsageError("import needs one FILE") }
            guard let collection = options.value("collection"), Names.isValidCollection(collection) else {
                throw UsageError("--collection NAME is required ([A-Za-z0-9][A-Za-z0-9._-]{0,63})")
            }
            try importFile(words[0], into: collection, idKey: options.value("id-key"), client: ClientOptions(options).client)
        case "export":
            guard words.count == 1, Names.isValidCollection(words[0]) else { throw UsageError("export needs one collection") }
            try export(words[0], kind: writtenKind(options) ?? .plist(.xml), idKey: options.value("id-key"), output: options.value("output"),
                       client: ClientOptions(options).client)
        default:
            throw UsageError("unknown command \(verb)")
        }
    }

    /// The file format `--format`, `--class` and `--root-key` ask for; nil without `--format`.
    private static func writtenKind(_ options: Arguments) throws -> CollectionFile.Kind? {
        switch options.value("format") {
        case nil: return nil
        case "xml": return .plist(.xml)
        case "binary": return .plist(.binary)
        case "archive":
            var shape = KeyedArchive.Shape(topKey: options.value("root-key") ?? "root")
            shape.elementClasses = options.value("class").map { [$0, "NSObject"] }
            return .archive(shape)
        default: throw UsageError("--format must be xml, binary or archive")
        }
    }

    /// The live records of a collection in order with their revs, from LIST (none when it does
    /// not exist and `missingIsEmpty`).
    private static func records(_ collection: String, client: ScriptClient, missingIsEmpty: Bool) throws -> [(entry: CollectionFile.Entry, rev: Int64)] {
        var records: [(entry: CollectionFile.Entry, rev: Int64)] = []
        var failure: (code: ErrorCode, line: String)?
        try client.run([.list(collection: collection)], onUntagged: { text in
            guard let line = try? ServerLine.parse(Array(text.utf8)), case .record(_, let id, let state) = ServerEvent(line),
                let fields = state.fields
            else { return }
            records.append((CollectionFile.Entry(id: id, fields: fields), state.rev))
        }, onReply: { text, event in
            if case .error(_, let code, _, _) = event { failure = (code, String(text.dropFirst(2))) }
            return true
        })
        if let failure, !(missingIsEmpty && failure.code == .notFound) { throw RuntimeError(failure.line) }
        return records
    }

    private static func importFile(_ path: String, into collection: String, idKey: String?, client: ScriptClient) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw RuntimeError("cannot read \(path)") }
        let entries: [CollectionFile.Entry]
        do {
            entries = try CollectionFile.entries(Array(data), idKey: idKey, newID: { UUID().uuidString }).entries
        } catch {
            throw RuntimeError("\(path): \(error)")
        }
        let existing = try records(collection, client: client, missingIsEmpty: true)
        let revisions = Dictionary(existing.map { ($0.entry.id, $0.rev) }, uniquingKeysWith: { first, _ in first })
        var requests: [Command] = existing.isEmpty ? [.create(collection: collection)] : []
        requests += entries.map { .put(collection: collection, id: $0.id, baseRev: revisions[$0.id] ?? 0, fieldsJSON: ValueJSON.encode(fields: $0.fields)) }
        var done = 0
        var failure: String?
        try client.run(requests, onReply: { text, event in
            // A collection made meanwhile (EXISTS on CREATE) is fine; any other refusal stops.
            if case .error(_, let code, _, _) = event, code != .exists {
                failure = String(text.dropFirst(2))
                return false
            }
            if case .ok(_, .written(.put, _, _, _, _), _) = event { done += 1 }
            return true
        })
        if let failure { throw RuntimeError("\(failure) (\(done) of \(entries.count) records imported before it)") }
        let updated = entries.filter { revisions[$0.id] != nil }.count
        Console.out("imported \(entries.count) records into \(collection): \(entries.count - updated) created, \(updated) updated")
    }

    private static func export(_ collection: String, kind: CollectionFile.Kind, idKey: String?, output: String?, client: ScriptClient) throws {
        let bytes = CollectionFile.encode(try records(collection, client: client, missingIsEmpty: false).map(\.entry), idKey: idKey, as: kind)
        guard let output else {
            Console.write(bytes)
            return
        }
        // A new file made durable, then renamed over the old one: a crash leaves one or the other.
        let temp = output + ".plistsync-export"
        guard FileManager.default.createFile(atPath: temp, contents: Data(bytes)), let handle = FileHandle(forWritingAtPath: temp) else {
            unlink(temp)
            throw RuntimeError("cannot write \(output)")
        }
        let synced = (try? handle.synchronize()) != nil
        try? handle.close()
        guard synced, rename(temp, output) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw RuntimeError("cannot write \(output): \(reason)")
        }
    }
}
