import Foundation

/// One-line log records on stderr, timestamped, for operators and for test failure output.
public enum ServerLog {
    nonisolated(unsafe) public static var quiet = false

    public static func info(_ message: String) { emit("info", message) }
    public static func error(_ message: String) { emit("error", message) }

    private static func emit(_ level: String, _ message: String) {
        guard !quiet || level == "error" else { return }
        let line = "\(ISO8601UTCNow()) \(level) \(message)\n"
        FileHandle.standardError.write(Data(line.utf8))
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
