import Foundation

/// Where the server's data folder is, found the same way by `serve`, the `user` commands and
/// `backup`/`restore`: `--data`, else `$PLISTSYNC_DATA`, else the `data` line of the config
/// file (`--config F`, `$PLISTSYNC_CONFIG`, or /etc/plistsync/server.conf when it exists), else
/// ./plistsync-data. A command that finds no folder does not make an empty second store.
struct DataLocation {
    let path: String
    /// Whether a flag, the environment or a config file named it (not the fallback).
    let isConfigured: Bool

    static let fallback = "./plistsync-data"
    static let systemConfig = "/etc/plistsync/server.conf"

    init(_ options: Arguments, config: ConfigFile?) {
        if let data = options.value("data") {
            (path, isConfigured) = (data, true)
        } else if let data = ProcessInfo.processInfo.environment["PLISTSYNC_DATA"], !data.isEmpty {
            (path, isConfigured) = (data, true)
        } else if let data = config?.values["data"] {
            (path, isConfigured) = (data, true)
        } else {
            (path, isConfigured) = (Self.fallback, false)
        }
    }

    /// The folder, which must exist already (for commands that only use a server's store).
    func existing() throws -> String {
        guard FileManager.default.fileExists(atPath: path) else {
            throw RuntimeError(isConfigured
                ? "no data folder at \(path)"
                : "no data folder at \(path): give the server's with --data DIR, PLISTSYNC_DATA or --config FILE (its data line)")
        }
        return path
    }
}

/// `/etc/plistsync/server.conf`: `serve` options one a line, `name = value` (or `name` alone
/// for a flag), `#` comments. Options given on the command line win.
struct ConfigFile {
    let path: String
    let values: [String: String]
    let flags: Set<String>

    /// The file `--config`, `$PLISTSYNC_CONFIG` or the system path names; nil when none is given
    /// and the system one does not exist.
    static func find(_ options: Arguments) throws -> ConfigFile? {
        if let path = options.value("config") ?? ProcessInfo.processInfo.environment["PLISTSYNC_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) {
            return try ConfigFile(path: path)
        }
        return FileManager.default.fileExists(atPath: DataLocation.systemConfig) ? try ConfigFile(path: DataLocation.systemConfig) : nil
    }

    init(path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw RuntimeError("cannot read the config file \(path)") }
        var values: [String: String] = [:]
        var flags: Set<String> = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                guard line.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else { throw RuntimeError("\(path):\(number + 1): expected name = value") }
                flags.insert(line)
                continue
            }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { throw RuntimeError("\(path):\(number + 1): expected name = value") }
            if value == "true" || value == "yes" {
                flags.insert(name)
            } else if value != "false" && value != "no" {
                values[name] = value
            }
        }
        self.path = path
        self.values = values
        self.flags = flags
    }

    /// The file as command-line arguments, to go before the real ones (which then win).
    var arguments: [String] {
        values.sorted { $0.key < $1.key }.flatMap { ["--\($0.key)", $0.value] } + flags.sorted().map { "--\($0)" }
    }
}
