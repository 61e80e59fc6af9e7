import Glibc

/// Raises this process's open-file limit to its hard limit (10,000 connections need it).
public enum OpenFileLimit {
    @discardableResult
    public static func raiseToMaximum() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}
