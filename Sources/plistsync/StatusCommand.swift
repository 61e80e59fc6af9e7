import Foundation
import SyncProtocol

/// `plistsync status --dir DIR`: what the agent of DIR is doing, from its status file.
enum StatusCommand: Subcommand {
    static let help = """
        OVERVIEW: Show what the agent mirroring a folder is doing.

        USAGE: plistsync status --dir DIR [--json]
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ["dir"], flagOptions: ["json"])
        guard let dir = options.value("dir") else { throw UsageError("--dir is required") }
        let path = dir + "/.plistsync/status.json"
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw RuntimeError("no agent has run on \(dir) (no \(path))")
        }
        if options.flag("json") {
            // The file is padded with spaces to whole blocks (so it can be rewritten on a full disk).
            print(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            return
        }
        guard case .dictionary(let status) = try? ValueJSON.decode(Array(bytes)) else { throw RuntimeError("\(path) is damaged") }
        func integer(_ key: String) -> Int64 { if case .integer(let value)? = status[key] { value } else { 0 } }
        func text(_ key: String) -> String { if case .string(let value)? = status[key] { value } else { "?" } }
        let pid = Int32(integer("pid"))
        let running = pid > 0 && kill(pid, 0) == 0
        let connected = status["connected"] == .bool(true)
        print("agent:      \(running ? "running (pid \(pid))" : "not running")")
        print("server:     \(text("server")) \(running && connected ? "connected" : "not connected") as \(text("user")) (device \(text("device")))")
        if case .string(let error)? = status["last_error"] { print("last error: \(error)") }
        if case .date(let synced)? = status["last_sync"] { print("last sync:  \(ISO8601UTC.format(synced))") }
        print("pending:    \(integer("pending")) local changes being pushed")
        print("totals:     \(integer("applied")) changes applied, \(integer("pushed")) pushed, \(integer("conflicts")) conflict copies made")
        if case .dictionary(let collections)? = status["collections"] {
            for name in collections.keys.sorted() {
                guard case .dictionary(let info)? = collections[name] else { continue }
                let seq = if case .integer(let value)? = info["seq"] { value } else { Int64(0) }
                let records = if case .integer(let value)? = info["records"] { value } else { Int64(0) }
                print("collection: \(name): \(records) records, seq \(seq)")
            }
        }
        for (title, key) in [("unparseable", "unparseable"), ("problem", "problems")] {
            if case .dictionary(let entries)? = status[key] {
                for name in entries.keys.sorted() {
                    if case .string(let reason)? = entries[name] { print("\(title): \(name): \(reason)") }
                }
            }
        }
        if case .array(let copies)? = status["conflict_copies"] {
            for case .string(let copy) in copies { print("conflict:   \(copy) (your version; the record file has the server's)") }
        }
        if case .date(let updated)? = status["updated"] { print("as of:      \(ISO8601UTC.format(updated))") }
    }
}
