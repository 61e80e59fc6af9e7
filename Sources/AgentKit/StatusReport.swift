import Foundation
import SyncCore
import SyncProtocol

/// What `plistsync status --dir DIR` shows: the agent's status file read back for a person,
/// one `label: value` line each.
public enum StatusReport {
    /// Why there is no report.
    public enum Failure: Error, CustomStringConvertible {
        case noAgentHasRun(directory: String, path: String)
        case damaged(path: String)

        public var description: String {
            switch self {
            case .noAgentHasRun(let directory, let path): "no agent has run on \(directory) (no \(path))"
            case .damaged(let path): "\(path) is damaged"
            }
        }
    }

    /// The status file of the agent of `directory`, as it stands on disk (trimmed): `--json`.
    public static func json(directory: String) throws(Failure) -> String {
        // The file is padded with spaces to whole blocks (so it can be rewritten on a full disk).
        String(decoding: try bytes(directory), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The report's lines.
    public static func lines(directory: String) throws(Failure) -> [String] {
        let path = statusPath(directory)
        guard case .dictionary(let status) = try? ValueJSON.decode(try bytes(directory)) else { throw .damaged(path: path) }
        func integer(_ key: String) -> Int64 { if case .integer(let value)? = status[key] { value } else { 0 } }
        func text(_ key: String) -> String { if case .string(let value)? = status[key] { value } else { "?" } }
        let pid = Int32(integer("pid"))
        let running = pid > 0 && kill(pid, 0) == 0
        let connected = status["connected"] == .bool(true)
        var lines = [
            "agent:      \(running ? "running (pid \(pid))" : "not running")",
            "server:     \(text("server")) \(running && connected ? "connected" : "not connected") as \(text("user")) (device \(text("device")))",
        ]
        if case .string(let error)? = status["last_error"] { lines.append("last error: \(error)") }
        if case .date(let synced)? = status["last_sync"] { lines.append("last sync:  \(ISO8601UTC.format(synced))") }
        lines.append("pending:    \(integer("pending")) local changes being pushed")
        lines.append("totals:     \(integer("applied")) changes applied, \(integer("pushed")) pushed, \(integer("conflicts")) conflict copies made")
        if case .dictionary(let collections)? = status["collections"] {
            for name in collections.keys.sorted() {
                guard case .dictionary(let info)? = collections[name] else { continue }
                let seq = if case .integer(let value)? = info["seq"] { value } else { Int64(0) }
                let records = if case .integer(let value)? = info["records"] { value } else { Int64(0) }
                lines.append("collection: \(name): \(records) records, seq \(seq)")
            }
        }
        for (title, key) in [("unparseable", "unparseable"), ("problem", "problems")] {
            if case .dictionary(let entries)? = status[key] {
                for name in entries.keys.sorted() {
                    if case .string(let reason)? = entries[name] { lines.append("\(title): \(name): \(reason)") }
                }
            }
        }
        if case .array(let copies)? = status["conflict_copies"] {
            for case .string(let copy) in copies { lines.append("conflict:   \(copy) (your version; the record file has the server's)") }
        }
        if case .date(let updated)? = status["updated"] { lines.append("as of:      \(ISO8601UTC.format(updated))") }
        return lines
    }

    private static func statusPath(_ directory: String) -> String { directory + "/.plistsync/status.json" }

    private static func bytes(_ directory: String) throws(Failure) -> [UInt8] {
        let path = statusPath(directory)
        guard let data = FileManager.default.contents(atPath: path) else { throw .noAgentHasRun(directory: directory, path: path) }
        return Array(data)
    }
}
