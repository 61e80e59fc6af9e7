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
    /// How the file is written until the agent has read it (an agent attached before the app
    /// made the file here); nil: by its extension, a keyed archive for `.archive`, else XML.
    public var kind: CollectionFile.Kind?

    public init(name: String, collection: String, idKey: String, kind: CollectionFile.Kind? = nil) {
        self.name = name
        self.collection = collection
        self.idKey = idKey
        self.kind = kind
    }

    /// The way the file is written when its own format is not known yet.
    var defaultKind: CollectionFile.Kind {
        kind ?? (name.hasSuffix(".archive") ? .archive(KeyedArchive.Shape()) : .plist(.xml))
    }
}

/// The attached files of a mirror, kept in `DIR/.plistsync/files.plist` (an array of
/// `{file, collection, idKey, kind}`), written by `plistsync attach`.
public enum AttachedFiles {
    static func path(_ directory: String) -> String { directory + "/.plistsync/files.plist" }

    public static func load(directory: String) throws(AttachError) -> [AttachedFile] {
        try load(directory: directory, in: PosixFileSystem())
    }

    static func load(directory: String, in fileSystem: any FileSystem) throws(AttachError) -> [AttachedFile] {
        guard let data = fileSystem.contents(at: path(directory)) else { return [] }
        guard case .array(let items)? = try? PlistFile.decode(data).0 else { throw AttachError("\(path(directory)) is damaged") }
        return items.compactMap { item in
            guard case .dictionary(let entry) = item, case .string(let name)? = entry["file"], case .string(let collection)? = entry["collection"],
                case .string(let idKey)? = entry["idKey"]
            else { return nil }
            return AttachedFile(name: name, collection: collection, idKey: idKey, kind: entry["kind"].flatMap(kind(from:)))
        }
    }

    private static func strings(_ value: Value?) -> [String]? {
        guard case .array(let items)? = value else { return nil }
        return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    private static func kind(from value: Value) -> CollectionFile.Kind? {
        guard case .dictionary(let members) = value, case .string(let format)? = members["format"] else { return nil }
        switch format {
        case "xml": return .plist(.xml)
        case "binary": return .plist(.binary)
        case "archive":
            var shape = KeyedArchive.Shape()
            if case .string(let archiver)? = members["archiver"] { shape.archiver = archiver }
            if case .string(let topKey)? = members["rootKey"] { shape.topKey = topKey }
            if let classes = strings(members["arrayClasses"]), !classes.isEmpty { shape.arrayClasses = classes }
            if let classes = strings(members["elementClasses"]), !classes.isEmpty { shape.elementClasses = classes }
            return .archive(shape)
        default: return nil
        }
    }

    private static func value(of kind: CollectionFile.Kind) -> Value {
        switch kind {
        case .plist(.xml): return .dictionary(["format": .string("xml")])
        case .plist(.binary): return .dictionary(["format": .string("binary")])
        case .archive(let shape):
            var members: [String: Value] = ["format": .string("archive"), "archiver": .string(shape.archiver), "rootKey": .string(shape.topKey),
                                            "arrayClasses": .array(shape.arrayClasses.map(Value.string))]
            members["elementClasses"] = shape.elementClasses.map { .array($0.map(Value.string)) }
            return .dictionary(members)
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
        let value = Value.array(files.map { file in
            var entry: [String: Value] = ["file": .string(file.name), "collection": .string(file.collection), "idKey": .string(file.idKey)]
            entry["kind"] = file.kind.map(value(of:))
            return .dictionary(entry)
        })
        do {
            let mirror = MirrorFolder(root: directory)
            try mirror.ensureFolder(mirror.stateFolder)
            try mirror.writeAtomically(PlistFile.encode(value, as: .xml), to: path(directory))
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
