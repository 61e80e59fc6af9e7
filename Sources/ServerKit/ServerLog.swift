import Foundation
import SyncProtocol

/// One line a record on stderr, timestamped, for operators (journald keeps stderr) and for test
/// failure output: free text (`info`, `error`) or an event with named fields (`event`), as
/// `key=value` text or, with `--log-format json`, one JSON object a line.
public enum ServerLog {
    nonisolated(unsafe) public static var quiet = false
    nonisolated(unsafe) public static var format = Format.text
    /// Where records go: stderr, or what a test that runs servers inside its process keeps.
    /// Set before any server's loop runs.
    nonisolated(unsafe) public static var output: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// How records are written.
    public enum Format: String, Sendable {
        case text, json
    }

    public static func info(_ message: String) { emit("info", message, [:]) }
    public static func error(_ message: String) { emit("error", message, [:]) }

    /// An event operators filter on (`login`, `login_failed`, `connection`, `grant`…) with its
    /// facts, in order.
    public static func event(_ name: String, _ fields: KeyValuePairs<String, String>, level: String = "info") {
        emit(level, name, fields)
    }

    private static func emit(_ level: String, _ message: String, _ fields: KeyValuePairs<String, String>) {
        guard !quiet || level == "error" else { return }
        let time = ISO8601UTCNow()
        let line: String
        switch format {
        case .text:
            let facts = fields.map { " \($0.key)=\(textValue($0.value))" }.joined()
            line = "\(time) \(level) \(message)\(facts)\n"
        case .json:
            let key = fields.isEmpty ? "msg" : "event"
            var members = [("time", time), ("level", level), (key, message)]
            members += fields.map { ($0.key, $0.value) }
            line = "{" + members.map { "\(ValueJSON.quoted($0.0)):\(ValueJSON.quoted($0.1))" }.joined(separator: ",") + "}\n"
        }
        output(line)
    }

    /// A value as it stands in a text record: quoted when it has spaces, quotes or is empty.
    private static func textValue(_ value: String) -> String {
        value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) ? ValueJSON.quoted(value) : value
    }

    private static func ISO8601UTCNow() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var tm = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &tm)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec / 1_000_000)
    }
}
