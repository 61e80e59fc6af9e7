import Foundation
import SyncProtocol

/// NSKeyedArchiver archives whose root object is an array of records (an inventory of custom
/// objects, a list of dictionaries): read into plain values and written back in the same shape
/// (archiver, root key, class names and `$classes` chains), with NSDate, NSString, NSNumber,
/// NSData, NSArray and NSDictionary as Foundation encodes them.
public enum KeyedArchive {
    /// How an archive is built, so an export writes what the app reads.
    public struct Shape: Equatable, Sendable {
        public var archiver = "NSKeyedArchiver"
        /// The key under `$top` that holds the root object (`root` for `archivedData(withRootObject:)`).
        public var topKey = "root"
        /// `$classes` of the root array, its class name first.
        public var arrayClasses = ["NSArray", "NSObject"]
        /// `$classes` of the elements when they are custom objects; nil for NSDictionary elements.
        public var elementClasses: [String]?

        public init(topKey: String = "root", elementClasses: [String]? = nil) {
            self.topKey = topKey
            self.elementClasses = elementClasses
        }
    }

    /// Whether a plist's root is a keyed archive.
    public static func isArchive(_ root: Value) -> Bool {
        guard case .dictionary(let members) = root, case .string? = members["$archiver"], case .array? = members["$objects"],
            case .dictionary? = members["$top"]
        else { return false }
        return true
    }

    /// The root array's elements as records (each a dictionary), and the archive's shape.
    public static func records(in root: Value) throws(PlistFile.ParseError) -> (records: [[String: Value]], shape: Shape) {
        guard case .dictionary(let members) = root, case .string(let archiver)? = members["$archiver"],
            case .array(let objects)? = members["$objects"], case .dictionary(let top)? = members["$top"]
        else { throw PlistFile.ParseError("not a keyed archive") }
        let topKey = top["root"] != nil ? "root" : top.keys.sorted().first ?? "root"
        var reader = Reader(objects: objects)
        guard case .dictionary(let rootReference)? = top[topKey], let rootIndex = PlistFile.uid(in: rootReference) else {
            throw PlistFile.ParseError("the archive has no root object")
        }
        let (rootValue, rootClasses) = try reader.object(Int(clamping: rootIndex), depth: 0)
        guard case .array(let elements)? = rootValue else { throw PlistFile.ParseError("the archive's root object is not an array") }
        var shape = Shape(topKey: topKey, elementClasses: nil)
        shape.archiver = archiver
        if let rootClasses { shape.arrayClasses = rootClasses }
        shape.elementClasses = reader.firstCustomClasses
        var records: [[String: Value]] = []
        for (index, element) in elements.enumerated() {
            guard case .dictionary(let fields) = element else { throw PlistFile.ParseError("element \(index) of the archive is not an object") }
            records.append(fields)
        }
        return (records, shape)
    }

    /// Resolves `$objects` into plain values.
    private struct Reader {
        let objects: [Value]
        var visiting: [Bool]
        /// Objects resolved so far: a shared object is resolved again at each reference, so a
        /// small archive shaped as a doubling DAG must not take exponential time.
        var resolved = 0
        static let maxResolved = 1_000_000
        /// `$classes` of the first custom (non-Foundation) object met, the records' class.
        var firstCustomClasses: [String]?
        /// Class objects already read, by object number: name and `$classes` chain.
        var classes: [Int: (name: String, chain: [String])] = [:]

        static let arrays: Set<String> = ["NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet"]
        static let dictionaries: Set<String> = ["NSDictionary", "NSMutableDictionary"]

        init(objects: [Value]) {
            self.objects = objects
            visiting = [Bool](repeating: false, count: objects.count)
        }

        /// The class object at `index`.
        mutating func classInfo(_ index: Int, of object: Int) throws(PlistFile.ParseError) -> (name: String, chain: [String]) {
            if let known = classes[index] { return known }
            guard objects.indices.contains(index), case .dictionary(let classInfo) = objects[index],
                case .string(let className)? = classInfo["$classname"]
            else { throw PlistFile.ParseError("object \(object) has no readable class") }
            var chain: [String] = [className]
            if case .array(let names)? = classInfo["$classes"] { chain = names.compactMap { if case .string(let name) = $0 { name } else { nil } } }
            classes[index] = (className, chain)
            return (className, chain)
        }

        /// An object's value (nil for `$null`) and, for class instances, its `$classes`.
        mutating func object(_ index: Int, depth: Int) throws(PlistFile.ParseError) -> (Value?, [String]?) {
            guard depth < PlistFile.maxDepth else { throw PlistFile.ParseError("the archive nests deeper than \(PlistFile.maxDepth)") }
            guard objects.indices.contains(index) else { throw PlistFile.ParseError("object reference \(index) out of range") }
            guard !visiting[index] else { throw PlistFile.ParseError("an archived object contains itself") }
            resolved += 1
            guard resolved <= Self.maxResolved else { throw PlistFile.ParseError("the archive expands to more than \(Self.maxResolved) objects") }
            visiting[index] = true
            defer { visiting[index] = false }
            let object = objects[index]
            if case .string("$null") = object { return (nil, nil) }
            guard case .dictionary(let members) = object, case .dictionary(let classReference)? = members["$class"],
                let classIndex = PlistFile.uid(in: classReference)
            else { return (object, nil) }
            let (className, classes) = try classInfo(Int(clamping: classIndex), of: index)
            switch className {
            case _ where Self.arrays.contains(className):
                return (.array(try references(members["NS.objects"], depth: depth)), classes)
            case _ where Self.dictionaries.contains(className):
                let keys = try references(members["NS.keys"], depth: depth)
                let values = try references(members["NS.objects"], depth: depth)
                guard keys.count == values.count else { throw PlistFile.ParseError("a dictionary's keys and objects differ in number") }
                var result = [String: Value](minimumCapacity: keys.count)
                for (key, value) in zip(keys, values) {
                    guard case .string(let name) = key else { throw PlistFile.ParseError("a dictionary key is not a string") }
                    result[name] = value
                }
                return (.dictionary(result), classes)
            case "NSDate":
                let seconds: Double
                switch members["NS.time"] {
                case .real(let value)?: seconds = value
                case .integer(let value)?: seconds = Double(value)
                case .largeInteger(let value)?: seconds = Double(value.value)
                default: throw PlistFile.ParseError("an NSDate without NS.time")
                }
                let date = Date(timeIntervalSinceReferenceDate: seconds)
                guard ISO8601UTC.isRepresentable(date) else { throw PlistFile.ParseError("a date outside years 0001-9999") }
                return (.date(date), classes)
            case "NSString", "NSMutableString":
                return (try value(members["NS.string"], depth: depth), classes)
            case "NSData", "NSMutableData":
                return (try value(members["NS.data"], depth: depth), classes)
            default:
                // A custom object: its encoded keys are its fields.
                if firstCustomClasses == nil { firstCustomClasses = classes }
                var fields = [String: Value](minimumCapacity: members.count - 1)
                for (key, member) in members where key != "$class" {
                    if let decoded = try value(member, depth: depth) { fields[key] = decoded }
                }
                return (.dictionary(fields), classes)
            }
        }

        /// A member: a reference is followed, anything else (an inline number) is the value.
        mutating func value(_ member: Value?, depth: Int) throws(PlistFile.ParseError) -> Value? {
            guard let member else { return nil }
            if case .dictionary(let reference) = member, let index = PlistFile.uid(in: reference) {
                return try object(Int(clamping: index), depth: depth + 1).0
            }
            return member
        }

        mutating func references(_ member: Value?, depth: Int) throws(PlistFile.ParseError) -> [Value] {
            guard case .array(let items)? = member else { return [] }
            var result: [Value] = []
            result.reserveCapacity(items.count)
            for item in items {
                if let decoded = try value(item, depth: depth) { result.append(decoded) }
            }
            return result
        }
    }

    /// An archive of `records` in `shape`, as the binary plist NSKeyedArchiver writes.
    public static func encode(_ records: [[String: Value]], shape: Shape) -> [UInt8] {
        var writer = Writer()
        let root = writer.reserve()
        // A key some objects have and others lack is an optional property: NSKeyedArchiver
        // writes it as `$null`, and an unarchiver may insist on finding it.
        var layout = ObjectLayout(keys: records.reduce(into: Set(["$class"])) { $0.formUnion($1.keys) }.sorted())
        let items = records.map { record in
            writer.table.uid(UInt64(shape.elementClasses.map { writer.object(record, classes: $0, layout: &layout) } ?? writer.add(.dictionary(record))))
        }
        writer.define(root, ["NS.objects": writer.table.array(items), "$class": writer.classReference(shape.arrayClasses)])
        var table = writer.table
        let objects = table.array(writer.objects)
        let top = table.dictionary(keys: [table.add(.string(shape.topKey))], values: [table.uid(UInt64(root))])
        let keys = ["$archiver", "$objects", "$top", "$version"].map { table.add(.string($0)) }
        let values = [table.add(.string(shape.archiver)), objects, top, table.add(.integer(100_000))]
        let archive = table.dictionary(keys: keys, values: values)
        return table.encoded(top: archive)
    }

    /// The members every record object of an archive has, in the order they are written, and
    /// their key strings' object numbers once added.
    private struct ObjectLayout {
        let keys: [String]
        var keyObjects: [Int] = []
    }

    /// Builds `$objects` straight into the binary file's objects: `$null` first, each class
    /// once; `objects` holds each archived object's number in the file.
    private struct Writer {
        var table = BinaryPlistWriter.ObjectTable()
        var objects: [Int] = []
        var classIndex: [[String]: Int] = [:]

        init() {
            objects.append(table.add(.string("$null")))
        }

        /// An archive slot for an object defined later (its members refer to later slots).
        mutating func reserve() -> Int {
            objects.append(objects[0])
            return objects.count - 1
        }

        /// Fills slot `index` with a dictionary of file objects, keys sorted.
        mutating func define(_ index: Int, _ members: [String: Int]) {
            let sorted = members.sorted { $0.key < $1.key }
            let keys = sorted.map { table.add(.string($0.key)) }
            objects[index] = table.dictionary(keys: keys, values: sorted.map(\.value))
        }

        mutating func reference(_ index: Int) -> Int { table.uid(UInt64(index)) }

        mutating func classReference(_ classes: [String]) -> Int {
            if let index = classIndex[classes] { return reference(index) }
            let names = table.array(classes.map { table.add(.string($0)) })
            let name = table.add(.string(classes[0]))
            objects.append(table.dictionary(keys: [table.add(.string("$classes")), table.add(.string("$classname"))], values: [names, name]))
            classIndex[classes] = objects.count - 1
            return reference(objects.count - 1)
        }

        /// A custom object: numbers and booleans inline, everything else by reference, the
        /// `layout`'s keys it lacks as `$null`.
        mutating func object(_ fields: [String: Value], classes: [String], layout: inout ObjectLayout) -> Int {
            let index = reserve()
            if layout.keyObjects.isEmpty { layout.keyObjects = layout.keys.map { table.add(.string($0)) } }
            var values: [Int] = []
            values.reserveCapacity(layout.keys.count)
            for key in layout.keys {
                switch key == "$class" ? nil : fields[key] {
                case nil where key == "$class": values.append(classReference(classes))
                case nil: values.append(reference(0))
                case let value? where value.isInlineInArchive: values.append(table.add(value))
                case let value?: values.append(reference(add(value)))
                }
            }
            objects[index] = table.dictionary(keys: layout.keyObjects, values: values)
            return index
        }

        /// Any value as Foundation archives it; its archive object number.
        mutating func add(_ value: Value) -> Int {
            switch value {
            case .string, .integer, .largeInteger, .real, .bool, .data:
                objects.append(table.add(value))
                return objects.count - 1
            case .date(let date):
                let index = reserve()
                define(index, ["NS.time": table.add(.real(date.timeIntervalSinceReferenceDate)), "$class": classReference(["NSDate", "NSObject"])])
                return index
            case .array(let items):
                let index = reserve()
                let references = items.map { reference(add($0)) }
                define(index, ["NS.objects": table.array(references), "$class": classReference(["NSArray", "NSObject"])])
                return index
            case .dictionary(let members):
                let index = reserve()
                let keys = members.keys.sorted()
                let keyReferences = keys.map { reference(add(.string($0))) }
                let valueReferences = keys.map { reference(add(members[$0]!)) }
                define(index, ["NS.keys": table.array(keyReferences), "NS.objects": table.array(valueReferences),
                               "$class": classReference(["NSDictionary", "NSObject"])])
                return index
            }
        }
    }
}

extension Value {
    /// Numbers and booleans are stored in an archived object itself, not as objects of their own.
    fileprivate var isInlineInArchive: Bool {
        switch self {
        case .integer, .largeInteger, .real, .bool: true
        default: false
        }
    }
}
