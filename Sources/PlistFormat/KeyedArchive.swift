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
        let (rootValue, rootClasses) = try reader.object(Int(rootIndex), depth: 0)
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
        var visiting: Set<Int> = []
        /// Objects resolved so far: a shared object is resolved again at each reference, so a
        /// small archive shaped as a doubling DAG must not take exponential time.
        var resolved = 0
        static let maxResolved = 1_000_000
        /// `$classes` of the first custom (non-Foundation) object met, the records' class.
        var firstCustomClasses: [String]?

        static let arrays: Set<String> = ["NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet"]
        static let dictionaries: Set<String> = ["NSDictionary", "NSMutableDictionary"]

        /// An object's value (nil for `$null`) and, for class instances, its `$classes`.
        mutating func object(_ index: Int, depth: Int) throws(PlistFile.ParseError) -> (Value?, [String]?) {
            guard depth < PlistFile.maxDepth else { throw PlistFile.ParseError("the archive nests deeper than \(PlistFile.maxDepth)") }
            guard objects.indices.contains(index) else { throw PlistFile.ParseError("object reference \(index) out of range") }
            guard visiting.insert(index).inserted else { throw PlistFile.ParseError("an archived object contains itself") }
            resolved += 1
            guard resolved <= Self.maxResolved else { throw PlistFile.ParseError("the archive expands to more than \(Self.maxResolved) objects") }
            defer { visiting.remove(index) }
            let object = objects[index]
            if case .string("$null") = object { return (nil, nil) }
            guard case .dictionary(var members) = object, case .dictionary(let classReference)? = members.removeValue(forKey: "$class"),
                let classIndex = PlistFile.uid(in: classReference)
            else { return (object, nil) }
            guard objects.indices.contains(Int(classIndex)), case .dictionary(let classInfo) = objects[Int(classIndex)],
                case .string(let className)? = classInfo["$classname"]
            else { throw PlistFile.ParseError("object \(index) has no readable class") }
            var classes: [String] = [className]
            if case .array(let chain)? = classInfo["$classes"] { classes = chain.compactMap { if case .string(let name) = $0 { name } else { nil } } }
            switch className {
            case _ where Self.arrays.contains(className):
                return (.array(try references(members["NS.objects"], depth: depth)), classes)
            case _ where Self.dictionaries.contains(className):
                let keys = try references(members["NS.keys"], depth: depth)
                let values = try references(members["NS.objects"], depth: depth)
                guard keys.count == values.count else { throw PlistFile.ParseError("a dictionary's keys and objects differ in number") }
                var result: [String: Value] = [:]
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
                var fields: [String: Value] = [:]
                for (key, member) in members {
                    if let decoded = try value(member, depth: depth) { fields[key] = decoded }
                }
                return (.dictionary(fields), classes)
            }
        }

        /// A member: a reference is followed, anything else (an inline number) is the value.
        mutating func value(_ member: Value?, depth: Int) throws(PlistFile.ParseError) -> Value? {
            guard let member else { return nil }
            if case .dictionary(let reference) = member, let index = PlistFile.uid(in: reference) {
                return try object(Int(index), depth: depth + 1).0
            }
            return member
        }

        mutating func references(_ member: Value?, depth: Int) throws(PlistFile.ParseError) -> [Value] {
            guard case .array(let items)? = member else { return [] }
            var result: [Value] = []
            for item in items {
                if let decoded = try value(item, depth: depth) { result.append(decoded) }
            }
            return result
        }
    }

    /// An archive of `records` in `shape`: write it as a binary plist (as NSKeyedArchiver does).
    public static func archive(_ records: [[String: Value]], shape: Shape) -> Value {
        var writer = Writer()
        let root = writer.reserve()
        // A key some objects have and others lack is an optional property: NSKeyedArchiver
        // writes it as `$null`, and an unarchiver may insist on finding it.
        let allKeys = records.reduce(into: Set<String>()) { $0.formUnion($1.keys) }
        let items = records.map { record in
            PlistFile.uidValue(shape.elementClasses.map { writer.object(record, classes: $0, keys: allKeys) } ?? writer.add(.dictionary(record)))
        }
        writer.objects[root] = .dictionary(["NS.objects": .array(items), "$class": writer.classReference(shape.arrayClasses)])
        return .dictionary([
            "$archiver": .string(shape.archiver),
            "$version": .integer(100_000),
            "$top": .dictionary([shape.topKey: PlistFile.uidValue(root)]),
            "$objects": .array(writer.objects),
        ])
    }

    /// Builds `$objects`: `$null` first, each class once.
    private struct Writer {
        var objects: [Value] = [.string("$null")]
        var classIndex: [[String]: Int] = [:]

        mutating func reserve() -> Int {
            objects.append(.string("$null"))
            return objects.count - 1
        }

        mutating func classReference(_ classes: [String]) -> Value {
            if let index = classIndex[classes] { return PlistFile.uidValue(index) }
            objects.append(.dictionary(["$classname": .string(classes[0]), "$classes": .array(classes.map(Value.string))]))
            classIndex[classes] = objects.count - 1
            return PlistFile.uidValue(objects.count - 1)
        }

        /// A custom object: numbers and booleans inline, everything else by reference, the
        /// `keys` it lacks as `$null`.
        mutating func object(_ fields: [String: Value], classes: [String], keys: Set<String>) -> Int {
            let index = reserve()
            var members: [String: Value] = [:]
            for key in keys where fields[key] == nil { members[key] = PlistFile.uidValue(0) }
            for (key, value) in fields {
                switch value {
                case .integer, .real, .bool: members[key] = value
                default: members[key] = PlistFile.uidValue(add(value))
                }
            }
            members["$class"] = classReference(classes)
            objects[index] = .dictionary(members)
            return index
        }

        /// Any value as Foundation archives it; its object number.
        mutating func add(_ value: Value) -> Int {
            switch value {
            case .string, .integer, .real, .bool, .data:
                objects.append(value)
                return objects.count - 1
            case .date(let date):
                let index = reserve()
                objects[index] = .dictionary(["NS.time": .real(date.timeIntervalSinceReferenceDate), "$class": classReference(["NSDate", "NSObject"])])
                return index
            case .array(let items):
                let index = reserve()
                let references = items.map { PlistFile.uidValue(add($0)) }
                objects[index] = .dictionary(["NS.objects": .array(references), "$class": classReference(["NSArray", "NSObject"])])
                return index
            case .dictionary(let members):
                let index = reserve()
                let keys = members.keys.sorted()
                let keyReferences = keys.map { PlistFile.uidValue(add(.string($0))) }
                let valueReferences = keys.map { PlistFile.uidValue(add(members[$0]!)) }
                objects[index] = .dictionary(["NS.keys": .array(keyReferences), "NS.objects": .array(valueReferences),
                                              "$class": classReference(["NSDictionary", "NSObject"])])
                return index
            }
        }
    }
}
