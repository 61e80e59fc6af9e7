import AgentKit
import Foundation
import PlistFormat
import SyncProtocol

/// What a test reads and writes in an agent's mirror folder, the same for an agent process
/// (`TestAgent`) and one running inside the test (`LiveAgent`).
protocol MirrorView {
    var directory: String { get }
}

extension MirrorView {
    /// What `plistsync status --dir` prints for this folder, as one text ("" without a status).
    func statusReport() -> String {
        ((try? StatusReport.lines(directory: directory)) ?? []).joined(separator: "\n")
    }

    /// The agent's `status.json` as text.
    func statusText() -> String {
        (try? String(contentsOfFile: directory + "/.plistsync/status.json", encoding: .utf8)) ?? ""
    }

    func path(_ collection: String, _ id: String) -> String { "\(directory)/\(collection)/\(id).plist" }

    /// Saves a record the way editors do: a temp file, then a rename.
    func save(_ collection: String, _ id: String, _ fields: Fields, format: PlistFile.Format = .xml) throws {
        try FileManager.default.createDirectory(atPath: "\(directory)/\(collection)", withIntermediateDirectories: true)
        let temp = "\(directory)/\(collection)/.\(id).tmp"
        try Data(PlistFile.encode(.dictionary(fields), as: format)).write(to: URL(fileURLWithPath: temp))
        guard rename(temp, path(collection, id)) == 0 else { throw LineClient.Failure(description: "rename failed: errno \(errno)") }
    }

    func fields(_ collection: String, _ id: String) -> Fields? {
        guard let data = FileManager.default.contents(atPath: path(collection, id)) else { return nil }
        return try? PlistFile.decodeRecord(Array(data)).0
    }

    func format(_ collection: String, _ id: String) -> PlistFile.Format? {
        guard let data = FileManager.default.contents(atPath: path(collection, id)) else { return nil }
        return try? PlistFile.decode(Array(data)).1
    }

    /// Every record file of every collection, parsed (conflict copies and hidden files left out).
    func snapshot() -> [String: [String: Fields]] {
        var result: [String: [String: Fields]] = [:]
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for folder in folders where !folder.hasPrefix(".") && !folder.hasSuffix(".plist") {
            var records: [String: Fields] = [:]
            for name in (try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/\(folder)")) ?? []
            where name.hasSuffix(".plist") && !name.hasPrefix(".") && !name.contains(".sync-conflict-") {
                let id = String(name.dropLast(6))
                records[id] = fields(folder, id) ?? ["<unparseable>": .bool(true)]
            }
            result[folder] = records
        }
        return result
    }

    func conflictCopies(_ collection: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/\(collection)")) ?? []).filter {
            $0.contains(".sync-conflict-") && !$0.hasPrefix(".")
        }
    }

    func order(_ collection: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(collection).order.plist"),
            case .array(let items)? = try? PlistFile.decode(Array(data)).0
        else { return [] }
        return items.compactMap { if case .string(let id) = $0 { id } else { nil } }
    }
}
