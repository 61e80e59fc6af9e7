import PlistFormat
import SyncCore
import SyncProtocol

/// A whole collection in one plist, the way apps keep their lists: the root an array of
/// dictionaries, or an NSKeyedArchiver archive whose root object is an array of objects; array
/// order = record order. Converts between such a file and records, for `plistsync import` and
/// `export`.
public enum CollectionFile {
    /// One element of the array as a record.
    public struct Entry: Equatable {
        public var id: String
        public var fields: Fields

        public init(id: String, fields: Fields) {
            self.id = id
            self.fields = fields
        }
    }

    /// Why a file cannot be read as a collection.
    public struct ShapeError: Error, CustomStringConvertible, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The elements of `bytes` (XML or binary plist) as records. With `idKey`, each element's
    /// id is its value of that key (a string, or an integer written in decimal), which must be
    /// a valid record id and unique; without it, ids come from `newID` (each import then makes
    /// new records).
    public static func entries(_ bytes: [UInt8], idKey: String?, newID: () -> String) throws -> (entries: [Entry], kind: Kind) {
        let root: Value
        let format: PlistFile.Format
        do {
            (root, format) = try PlistFile.decode(bytes)
        } catch {
            throw ShapeError("not a plist: \(error)")
        }
        let elements: [Value]
        let kind: Kind
        if KeyedArchive.isArchive(root) {
            do {
                let (records, shape) = try KeyedArchive.records(in: root)
                (elements, kind) = (records.map(Value.dictionary), .archive(shape))
            } catch {
                throw ShapeError("a keyed archive that is not a list of records: \(error)")
            }
        } else if case .array(let items) = root {
            (elements, kind) = (items, .plist(format))
        } else {
            throw ShapeError("the top level is not an array (of records) or a keyed archive of one")
        }
        var seen: Set<RecordID> = []
        var entries: [Entry] = []
        for (index, element) in elements.enumerated() {
            guard case .dictionary(let fields) = element else { throw ShapeError("element \(index) is not a dictionary") }
            let id: String
            if let idKey {
                switch fields[idKey] {
                case .string(let text)?: id = text
                case .integer(let number)?: id = String(number)
                case .largeInteger(let number)?: id = String(number.value)
                case nil: throw ShapeError("element \(index) has no \(ValueJSON.quoted(idKey))")
                default: throw ShapeError("element \(index): \(ValueJSON.quoted(idKey)) is not a string or an integer")
                }
            } else {
                id = newID()
            }
            guard Names.isValidRecordID(id) else { throw ShapeError("element \(index): \(ValueJSON.quoted(id)) cannot be a record id") }
            guard seen.insert(RecordID(id)).inserted else { throw ShapeError("element \(index): the id \(ValueJSON.quoted(id)) appears twice") }
            entries.append(Entry(id: id, fields: fields))
        }
        return (entries, kind)
    }

    /// How the file is written: a plain plist array, or a keyed archive of that shape (binary).
    public enum Kind: Equatable, Sendable {
        case plist(PlistFile.Format)
        case archive(KeyedArchive.Shape)
    }

    /// The records as one array-root plist, in order. With `idKey`, each element carries its id
    /// under that key unless it has the key already.
    public static func encode(_ entries: [Entry], idKey: String?, as kind: Kind) -> [UInt8] {
        let records = entries.map { entry -> Fields in
            var fields = entry.fields
            if let idKey, fields[idKey] == nil { fields[idKey] = .string(entry.id) }
            return fields
        }
        switch kind {
        case .plist(let format): return PlistFile.encode(.array(records.map(Value.dictionary)), as: format)
        case .archive(let shape): return KeyedArchive.encode(records, shape: shape)
        }
    }
}
