import Foundation
@testable import AgentKit

/// An in-memory file system shared by every simulated machine (each has its own root), with
/// the faults a real one has: a full disk for chosen roots, and every change reported to a
/// watcher the way inotify reports it (a rename or create or delete is `renamed`, a write is
/// `changed`, both for the folder holding the name).
final class SimulatedFileSystem: FileSystem {
    private enum Node {
        case file([UInt8], modified: Date)
        case folder
    }

    private var nodes: [String: Node] = ["/": .folder]
    private var children: [String: Set<String>] = ["/": []]
    /// Roots (prefixes) whose writes fail with ENOSPC.
    var fullDisks: Set<String> = []
    /// Called for every change: the folder, the name in it, and whether it is a rename-kind
    /// event (create, delete, rename) rather than a write.
    var onChange: (_ folder: String, _ name: String, _ renamed: Bool) -> Void = { _, _, _ in }
    var now: () -> Date = { Date(timeIntervalSince1970: 0) }

    private static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return ("/", path) }
        let folder = String(path[..<slash])
        return (folder.isEmpty ? "/" : folder, String(path[path.index(after: slash)...]))
    }

    func isFull(_ path: String) -> Bool {
        fullDisks.contains { path.hasPrefix($0) }
    }

    private func put(_ path: String, _ node: Node) {
        let (folder, name) = Self.split(path)
        let existed = nodes[path] != nil
        nodes[path] = node
        children[folder, default: []].insert(name)
        if case .folder = node, children[path] == nil { children[path] = [] }
        if !existed { onChange(folder, name, true) }
    }

    private func take(_ path: String) -> Node? {
        guard let node = nodes.removeValue(forKey: path) else { return nil }
        let (folder, name) = Self.split(path)
        children[folder]?.remove(name)
        onChange(folder, name, true)
        return node
    }

    /// Every path under `folder` (files and folders, deepest last), for moving a whole tree.
    private func subtree(_ folder: String) -> [String] {
        var result: [String] = []
        for name in (children[folder] ?? []).sorted() {
            let path = folder + "/" + name
            result.append(path)
            if case .folder? = nodes[path] { result += subtree(path) }
        }
        return result
    }

    // MARK: - FileSystem

    func kind(at path: String) -> FileKind {
        switch nodes[path] {
        case nil: .missing
        case .file?: .file
        case .folder?: .folder
        }
    }

    func isFolder(_ path: String) -> Bool {
        if case .folder? = nodes[path] { return true }
        return false
    }

    func contents(at path: String) -> [UInt8]? {
        if case .file(let bytes, _)? = nodes[path] { return bytes }
        return nil
    }

    func names(in folder: String) -> [String]? {
        guard isFolder(folder) else { return nil }
        return (children[folder] ?? []).sorted()
    }

    func makeFolder(_ path: String) throws(FileSystemError) {
        guard path != "/", !isFolder(path) else { return }
        guard nodes[path] == nil else { throw .exists }
        try makeFolder(Self.split(path).folder)
        put(path, .folder)
    }

    func writeFile(_ path: String, _ bytes: [UInt8], durable: Bool) throws(FileSystemError) {
        guard isFolder(Self.split(path).folder) else { throw .notFound }
        if case .folder? = nodes[path] { throw .other("is a folder") }
        guard !isFull(path) else {
            _ = take(path)
            throw .noSpace
        }
        put(path, .file(bytes, modified: now()))
        let (folder, name) = Self.split(path)
        onChange(folder, name, false)
    }

    func makeDurable(_ paths: [String], under root: String) {}

    func rename(_ from: String, to: String) throws(FileSystemError) {
        guard let node = nodes[from] else { throw .notFound }
        guard isFolder(Self.split(to).folder) else { throw .notFound }
        if case .folder = node {
            guard nodes[to] == nil else { throw .exists }
            let inside = subtree(from)
            _ = take(from)
            put(to, .folder)
            for path in inside {
                let moved = nodes.removeValue(forKey: path)!
                children[Self.split(path).folder]?.remove(Self.split(path).name)
                let target = to + path.dropFirst(from.count)
                nodes[target] = moved
                children[Self.split(target).folder, default: []].insert(Self.split(target).name)
                if case .folder = moved, children[target] == nil { children[target] = [] }
            }
            for path in inside { children[path] = nil }
            return
        }
        if case .folder? = nodes[to] { throw .other("is a folder") }
        _ = take(from)
        _ = take(to)
        put(to, node)
    }

    func exchange(_ first: String, _ second: String) throws(FileSystemError) {
        guard let one = nodes[first], let other = nodes[second] else { throw .notFound }
        nodes[first] = other
        nodes[second] = one
        for path in [first, second] {
            let (folder, name) = Self.split(path)
            onChange(folder, name, true)
        }
    }

    func renameWithoutReplacing(_ from: String, to: String) throws(FileSystemError) {
        guard nodes[to] == nil else { throw .exists }
        try rename(from, to: to)
    }

    func removeFile(_ path: String) {
        if case .file? = nodes[path] { _ = take(path) }
    }

    func modificationDate(_ path: String) -> Date? {
        if case .file(_, let modified)? = nodes[path] { return modified }
        return nil
    }

    // MARK: - For the simulation's apps and checks

    /// Every file under `folder`, recursively, by path.
    func files(under folder: String) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for path in subtree(folder) {
            if case .file(let bytes, _)? = nodes[path] { result[path] = bytes }
        }
        return result
    }

    /// Writes a file in place (an app's non-atomic save: truncate, write): on a full disk the
    /// app is told and the file is left as it was.
    func overwrite(_ path: String, with bytes: [UInt8]) throws(FileSystemError) {
        guard !isFull(path) else { throw .noSpace }
        try writeFile(path, bytes, durable: false)
    }
}
