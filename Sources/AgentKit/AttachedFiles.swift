import Foundation
import PlistFormat
import SyncCore
import SyncProtocol

/// An app's own data file mirrored as a whole collection: one file at the top of the mirror
/// folder (an array of dictionaries, or a keyed archive of one), one element a record.
public struct AttachedFile: Equatable, Sendable {
    /// The file's name in the mirror folder (top level).
    public var name: String
    public var collection: String
    /// The field that holds each element's record id.
    public var idKey: String

    public init(name: String, collection: String, idKey: String) {
        self.name = name
        self.collection = collection
        self.idKey = idKey
    }
}

/// The attached files of a mirror, kept in `DIR/.plistsync/files.plist` (an array of
/// `{file, collection, idKey}`), written by `plistsync attach`.
public enum AttachedFiles {
    static func path(_ directory: String) -> String { directory + "/.plistsync/files.plist" }

    public static func load(directory: String) throws(AttachError) -> [AttachedFile] {
        guard let data = FileManager.default.contents(atPath: path(directory)) else { return [] }
        guard case .array(let items)? = try? PlistFile.decode(Array(data)).0 else { throw AttachError("\(path(directory)) is damaged") }
        return items.compactMap { item in
            guard case .dictionary(let entry) = item, case .string(let name)? = entry["file"], case .string(let collection)? = entry["collection"],
                case .string(let idKey)? = entry["idKey"]
            else { return nil }
            return AttachedFile(name: name, collection: collection, idKey: idKey)
        }
    }

    /// Adds (or replaces) the attachment of a file; the agent reads the list when it starts.
    public static func attach(_ file: AttachedFile, directory: String) throws(AttachError) {
        guard !file.name.contains("/"), !file.name.hasPrefix("."), !file.name.hasSuffix(".order.plist"), !file.name.isEmpty else {
            throw AttachError("attach a file at the top of the mirror folder by its name (not hidden, not an order file)")
        }
        guard Names.isValidCollection(file.collection) else { throw AttachError("invalid collection name \(file.collection)") }
        guard !file.idKey.isEmpty else { throw AttachError("--id-key must name a field") }
        var files = try load(directory: directory).filter { $0.name != file.name }
        guard !files.contains(where: { $0.collection == file.collection }) else {
            throw AttachError("\(file.collection) is already mirrored by another file")
        }
        files.append(file)
        let value = Value.array(files.map { .dictionary(["file": .string($0.name), "collection": .string($0.collection), "idKey": .string($0.idKey)]) })
        do {
            try FileManager.default.createDirectory(atPath: directory + "/.plistsync", withIntermediateDirectories: true)
            try MirrorFolder(root: directory).writeAtomically(PlistFile.encode(value, as: .xml), to: path(directory))
        } catch {
            throw AttachError("cannot write \(path(directory)): \(error)")
        }
    }
}

/// Why a file cannot be attached.
public struct AttachError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
