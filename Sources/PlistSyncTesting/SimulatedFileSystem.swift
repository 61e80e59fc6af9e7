import Foundation
import AgentKit
import SyncCore

/// An in-memory file system shared by every simulated machine (each has its own root), with
/// the faults a real one has: a full disk for chosen roots, and every change reported to a
/// watcher the way inotify reports it (a rename or create or delete is `renamed`, a write is
/// `changed`, both for the folder holding the name). Names are compared by their bytes, as on
/// Linux; with `normalising`, names that differ only in Unicode normalisation are one file (as
/// on macOS or ZFS with `normalization=formD`), listed under the name it was created with.
public final class SimulatedFileSystem: FileSystem {
    private enum Node {
        case file([UInt8], modified: Date)
        case folder
    }

    public init() {}

    /// Nodes by `key(path)`.
    private var nodes: [RecordID: Node] = ["/": .folder]
    /// Per folder key, its entries: name key → the name as created.
    private var children: [RecordID: [RecordID: String]] = ["/": [:]]
    /// Roots (prefixes) whose writes fail with ENOSPC.
    public var fullDisks: Set<String> = []
    /// Roots (prefixes) on a normalising file system.
    public var normalisingRoots: Set<String> = []
    /// Called for every change: the folder, the name in it, and whether it is a rename-kind
    /// event (create, delete, rename) rather than a write.
    public var onChange: (_ folder: String, _ name: String, _ renamed: Bool) -> Void = { _, _, _ in }
    /// The wall clock of the machine a path is on (a file's modification time).
    public var now: (_ path: String) -> Date = { _ in Date(timeIntervalSince1970: 0) }
    /// Paths whose every content is kept in `versions`, oldest first (for checks that need
    /// what a file held over time, not only now).
    public var versionedPaths: Set<String> = []
    public private(set) var versions: [String: [[UInt8]]] = [:]
    /// Counts every change to any file or folder: a check that found nothing wrong need not
    /// look again until it moves.
    public private(set) var generation = 0
    /// Folders whose entries changed since `takeChangedFolders` was last called.
    private var changedFolders: Set<String> = []

    /// The folders whose entries changed since the last call (a checker that keeps what each
    /// folder holds reads only those again).
    public func takeChangedFolders() -> Set<String> {
        defer { changedFolders.removeAll() }
        return changedFolders
    }

    private static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return ("/", path) }
        let folder = String(path[..<slash])
        return (folder.isEmpty ? "/" : folder, String(path[path.index(after: slash)...]))
    }

    private func key(_ path: String) -> RecordID {
        RecordID(normalisingRoots.contains { path.hasPrefix($0) } ? path.precomposedStringWithCanonicalMapping : path)
    }

    public func isFull(_ path: String) -> Bool {
        fullDisks.contains { path.hasPrefix($0) }
    }

    private func put(_ path: String, _ node: Node) {
        generation += 1
        let (folder, name) = Self.split(path)
        changedFolders.insert(folder)
        let existed = nodes[key(path)] != nil
        nodes[key(path)] = node
        keepVersion(path, node)
        let nameKey = key(folder + "/" + name)
        if children[key(folder), default: [:]][nameKey] == nil { children[key(folder), default: [:]][nameKey] = name }
        if case .folder = node, children[key(path)] == nil { children[key(path)] = [:] }
        if !existed { onChange(folder, name, true) }
    }

    private func keepVersion(_ path: String, _ node: Node) {
        if case .file(let bytes, _) = node, versionedPaths.contains(path) { versions[path, default: []].append(bytes) }
    }

    private func take(_ path: String) -> Node? {
        guard let node = nodes.removeValue(forKey: key(path)) else { return nil }
        generation += 1
        let (folder, name) = Self.split(path)
        changedFolders.insert(folder)
        children[key(folder)]?[key(folder + "/" + name)] = nil
        onChange(folder, name, true)
        return node
    }

    /// The names in a folder as created, in byte order.
    private func entries(_ folder: String) -> [String] {
        (children[key(folder)] ?? [:]).values.sorted { RecordID($0) < RecordID($1) }
    }

    /// Every path under `folder` (files and folders, deepest last), for moving a whole tree.
    private func subtree(_ folder: String, into: (String) -> Bool = { _ in true }) -> [String] {
        var result: [String] = []
        for name in entries(folder) {
            let path = folder + "/" + name
            result.append(path)
            if case .folder? = nodes[key(path)], into(path) { result += subtree(path, into: into) }
        }
        return result
    }

    // MARK: - FileSystem

    public func kind(at path: String) -> FileKind {
        switch nodes[key(path)] {
        case nil: .missing
        case .file?: .file
        case .folder?: .folder
        }
    }

    public func isFolder(_ path: String) -> Bool {
        if case .folder? = nodes[key(path)] { return true }
        return false
    }

    /// Whole-file reads asked for, per path, for tests that count the agent's file work.
    public private(set) var readCounts: [String: Int] = [:]

    public func contents(at path: String) -> [UInt8]? {
        readCounts[path, default: 0] += 1
        if case .file(let bytes, _)? = nodes[key(path)] { return bytes }
        return nil
    }

    public func names(in folder: String) -> [String]? {
        guard isFolder(folder) else { return nil }
        return entries(folder)
    }

    public func makeFolder(_ path: String) throws(FileSystemError) {
        guard path != "/", !isFolder(path) else { return }
        guard nodes[key(path)] == nil else { throw .exists }
        try makeFolder(Self.split(path).folder)
        put(path, .folder)
    }

    public func writeFile(_ path: String, _ bytes: [UInt8], durable: Bool) throws(FileSystemError) {
        guard isFolder(Self.split(path).folder) else { throw .notFound }
        if case .folder? = nodes[key(path)] { throw .other("is a folder") }
        guard !isFull(path) else {
            _ = take(path)
            throw .noSpace
        }
        put(path, .file(bytes, modified: now(path)))
        let (folder, name) = Self.split(path)
        onChange(folder, name, false)
    }

    public func makeDurable(_ paths: [String], under root: String) {}

    public func rename(_ from: String, to: String) throws(FileSystemError) {
        guard let node = nodes[key(from)] else { throw .notFound }
        guard isFolder(Self.split(to).folder) else { throw .notFound }
        if case .folder = node {
            guard nodes[key(to)] == nil else { throw .exists }
            let inside = subtree(from)
            let moved = inside.map { ($0, nodes[key($0)]!) }
            _ = take(from)
            children[key(from)] = nil
            put(to, .folder)
            for (path, _) in moved.reversed() {
                nodes[key(path)] = nil
                children[key(path)] = nil
                children[key(Self.split(path).folder)]?[key(path)] = nil
            }
            for (path, node) in moved {
                let target = to + String(decoding: path.utf8.dropFirst(from.utf8.count), as: UTF8.self)
                let (folder, name) = Self.split(target)
                nodes[key(target)] = node
                children[key(folder), default: [:]][key(target)] = name
                if case .folder = node, children[key(target)] == nil { children[key(target)] = [:] }
            }
            return
        }
        if case .folder? = nodes[key(to)] { throw .other("is a folder") }
        _ = take(from)
        _ = take(to)
        put(to, node)
    }

    public func exchange(_ first: String, _ second: String) throws(FileSystemError) {
        guard let one = nodes[key(first)], let other = nodes[key(second)] else { throw .notFound }
        nodes[key(first)] = other
        nodes[key(second)] = one
        for (path, node) in [(first, other), (second, one)] { keepVersion(path, node) }
        for path in [first, second] {
            let (folder, name) = Self.split(path)
            onChange(folder, name, true)
        }
    }

    public func renameWithoutReplacing(_ from: String, to: String) throws(FileSystemError) {
        guard nodes[key(to)] == nil else { throw .exists }
        try rename(from, to: to)
    }

    public func removeFile(_ path: String) {
        if case .file? = nodes[key(path)] { _ = take(path) }
    }

    public func modificationDate(_ path: String) -> Date? {
        if case .file(_, let modified)? = nodes[key(path)] { return modified }
        return nil
    }

    public func overwriteInPlace(_ path: String, with bytes: [UInt8]) -> Bool {
        guard case .file(let old, _)? = nodes[key(path)], old.count >= bytes.count else { return false }
        put(path, .file(bytes + Array(repeating: UInt8(ascii: " "), count: old.count - bytes.count), modified: now(path)))
        let (folder, name) = Self.split(path)
        onChange(folder, name, false)
        return true
    }

    // MARK: - For the simulation's apps and checks

    /// Every file under `folder`, recursively, with its path.
    /// Every file under `folder`, looking into the folders below it for which `into` holds.
    public func files(under folder: String, into: (String) -> Bool = { _ in true }) -> [(path: String, bytes: [UInt8])] {
        subtree(folder, into: into).compactMap { path in
            if case .file(let bytes, _)? = nodes[key(path)] { (path, bytes) } else { nil }
        }
    }

    /// Writes a file in place (an app's non-atomic save: truncate, write): on a full disk the
    /// app is told and the file is left as it was.
    public func overwrite(_ path: String, with bytes: [UInt8]) throws(FileSystemError) {
        guard !isFull(path) else { throw .noSpace }
        try writeFile(path, bytes, durable: false)
    }
}
