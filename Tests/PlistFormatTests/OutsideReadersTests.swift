import Foundation
import SyncProtocol
import XCTest
@testable import PlistFormat

/// Issue 43: PlistSync's plist readers and writers checked against other projects' test data and
/// readers: CPython's test_plistlib (every plist it loads or writes), the Rust plist crate's test
/// files, biplist's and libplist's output (Tests/Fidelity/outside_plists.py gathers them from
/// Debian's packages at test time). A plist plistlib reads must read here as the same value,
/// never a changed one; every value type PlistSync writes must read back equal in plistlib and in
/// libplist. Skipped when the packages are missing, unless PLISTSYNC_REQUIRE_OUTSIDE_DATA is set
/// (Deploy/test.sh installs them and sets it).
final class OutsideReadersTests: XCTestCase {
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fidelity/outside_plists.py").path
    private static let python = "/usr/bin/python3"

    private func requireOutsideTools() throws {
        let fm = FileManager.default
        let missing = [Self.python, "/usr/lib/python3.11/test/test_plistlib.py", "/usr/bin/plistutil"].filter { !fm.fileExists(atPath: $0) }
        guard missing.isEmpty else {
            let message = "outside plist tools missing: \(missing.joined(separator: ", ")) (Deploy/test.sh installs them)"
            if ProcessInfo.processInfo.environment["PLISTSYNC_REQUIRE_OUTSIDE_DATA"] != nil { XCTFail(message) }
            throw XCTSkip(message)
        }
    }

    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw PlistFile.ParseError("\(executable) \(arguments) exited \(process.terminationStatus)") }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outside-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }

    func testEveryPlistTheOutsideTestDataReadsIsReadAsTheValueItHolds() throws {
        try requireOutsideTools()
        let folder = try temporaryFolder()
        try run(Self.python, [Self.script, "harvest", folder.path])
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".plist") }.sorted()
        var tally = Tally()
        for name in names {
            let bytes = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
            let verdict = try OutsideVerdict(try Data(contentsOf: folder.appendingPathComponent(name).deletingPathExtension().appendingPathExtension("expect")))
            let ours = Result { () throws(PlistFile.ParseError) in try PlistFile.decode(bytes).0 }
            switch (verdict.reading, ours) {
            case (.value(let expected), .success(let value)) where !OutsideVerdict.same(value, expected) && bytes.contains(0x0D)
                && OutsideVerdict.same(value.withLineEndsAsExpatReadsThem, expected):
                // CoreFoundation and libplist keep a raw CR in XML text; expat turns it into LF.
                tally.rawCarriageReturns += 1
            case (.value(let expected), .success(let value)):
                XCTAssertTrue(OutsideVerdict.same(value, expected), "\(name) from \(verdict.source): read as \(ValueJSON.encode(value)), plistlib reads \(ValueJSON.encode(expected))")
                tally.readEqual += 1
            case (.value(let expected), .failure(let error)) where error.reason.contains("fill byte (0x0F)") && expected.holdsEmptyData:
                tally.fillBytes += 1
            case (.value(let expected), .failure(let error)):
                XCTFail("\(name) from \(verdict.source): refused (\(error)) but plistlib reads \(ValueJSON.encode(expected))")
            case (.unsupported(let what), .success(let value)):
                XCTFail("\(name) from \(verdict.source): plistlib reads \(what), which has no plist value, yet it read as \(ValueJSON.encode(value))")
            case (.unsupported, .failure):
                tally.refusedWithoutPlistValue += 1
            case (.deep, .failure(let error)) where error.reason.contains("nested deeper than \(PlistFile.maxDepth)"):
                tally.deeperThanTheLimit += 1
            case (.deep, let ours):
                XCTFail("\(name) from \(verdict.source): nested deeper than \(PlistFile.maxDepth), yet \(ours)")
            case (.refused, .failure):
                tally.refusedByBoth += 1
            case (.refused(let why), .success):
                tally.readButRefusedByPlistlib.append("\(name) from \(verdict.source) (plistlib: \(why))")
            }
        }
        print("outside plists: \(names.count) files; \(tally.readEqual) read as plistlib reads them, \(tally.refusedByBoth) refused by both, "
            + "\(tally.refusedWithoutPlistValue) refused for holding what has no plist value (null, a container holding itself), "
            + "\(tally.deeperThanTheLimit) refused as nested deeper than \(PlistFile.maxDepth), \(tally.fillBytes) refused for a fill byte plistlib reads as empty data, "
            + "\(tally.rawCarriageReturns) with a raw CR kept as CoreFoundation keeps it (expat reads LF), "
            + "\(tally.readButRefusedByPlistlib.count) read here but refused by plistlib, such as \(tally.readButRefusedByPlistlib.prefix(3).joined(separator: "; "))")
        XCTAssertGreaterThan(tally.readEqual, 500, "the harvest found too few files")
    }

    private struct Tally {
        var readEqual = 0
        var refusedByBoth = 0
        var refusedWithoutPlistValue = 0
        var deeperThanTheLimit = 0
        var fillBytes = 0
        var rawCarriageReturns = 0
        var readButRefusedByPlistlib: [String] = []
    }

    /// One value of every type PlistSync's writers produce, each edge of the integer range.
    private static let everyType: Value = .dictionary([
        "string": .string("Ada <Lovelace> & \"Babbage\"\r\nZoë 🎉\r\t"), "empty": .string(""),
        "int min": .integer(.min), "int -1": .integer(-1), "int 0": .integer(0), "int 255": .integer(255), "int 256": .integer(256),
        "int 2^32": .integer(1 << 32), "int max": .integer(.max), "2^63": .unsigned(UInt64(Int64.max) + 1), "2^63+44": .unsigned(UInt64(1) << 63 + 44),
        "2^64-1": .unsigned(.max), "real": .real(1199.99), "whole real": .real(2.0), "tiny": .real(.leastNonzeroMagnitude), "negative zero": .real(-0.0),
        "true": .bool(true), "false": .bool(false), "date": .date(Date(timeIntervalSince1970: 1_600_000_000)),
        "old date": .date(Date(timeIntervalSince1970: -2_000_000_000)), "data": .data(Data((0..<300).map { UInt8($0 % 256) })),
        "no data": .data(Data()), "list": .array([.string("a"), .integer(2), .array([]), .dictionary([:])]),
        "$dollar": .dictionary(["nested": .unsigned(.max), "deep": .array([.array([.real(0.5)])])]),
    ])

    func testEveryValueTypePlistSyncWritesReadsBackEqualInPlistlibAndLibplist() throws {
        try requireOutsideTools()
        let folder = try temporaryFolder()
        var files: [(URL, PlistFile.Format)] = []
        for format in [PlistFile.Format.xml, .binary] {
            let file = folder.appendingPathComponent("ours.\(format.rawValue).plist")
            try Data(PlistFile.encode(Self.everyType, as: format)).write(to: file)
            files.append((file, format))
        }
        let lines = try run(Self.python, [Self.script, "read"] + files.map(\.0.path)).split(separator: "\n")
        XCTAssertEqual(lines.count, files.count)
        for (line, (file, format)) in zip(lines, files) {
            let verdict = try OutsideVerdict(Data(line.utf8))
            guard case .value(let read) = verdict.reading else { return XCTFail("plistlib does not read our \(format) plist: \(line)") }
            XCTAssertTrue(OutsideVerdict.same(read, Self.everyType), "plistlib reads our \(format) plist as \(ValueJSON.encode(read))")
            // libplist reads ours and writes it in the other format; that must hold the same values.
            let converted = folder.appendingPathComponent("libplist-from-\(format.rawValue).plist")
            try run("/usr/bin/plistutil", ["-i", file.path, "-o", converted.path, "-f", format == .xml ? "bin" : "xml"])
            let (again, _) = try PlistFile.decode(Array(try Data(contentsOf: converted)))
            var expected = Self.everyType
            if format == .binary, case .dictionary(var members) = expected {
                members["negative zero"] = .real(0.0)  // libplist 2.2 writes -0.0 as <real>0.0</real>
                expected = .dictionary(members)
            }
            XCTAssertTrue(OutsideVerdict.same(again, expected), "libplist rewrote our \(format) plist as \(ValueJSON.encode(again))")
        }
    }
}

extension Value {
    /// The value with each CR LF and lone CR in its strings and keys as LF, as an XML 1.0
    /// parser (expat, so plistlib) reads raw line ends.
    fileprivate var withLineEndsAsExpatReadsThem: Value {
        func lineFeeds(_ text: String) -> String { text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n") }
        switch self {
        case .string(let text): return .string(lineFeeds(text))
        case .array(let items): return .array(items.map(\.withLineEndsAsExpatReadsThem))
        case .dictionary(let members):
            return .dictionary(Dictionary(members.map { (lineFeeds($0.key), $0.value.withLineEndsAsExpatReadsThem) }, uniquingKeysWith: { first, _ in first }))
        default: return self
        }
    }

    /// Whether empty data appears anywhere in the value.
    fileprivate var holdsEmptyData: Bool {
        switch self {
        case .data(let data): data.isEmpty
        case .array(let items): items.contains { $0.holdsEmptyData }
        case .dictionary(let members): members.values.contains { $0.holdsEmptyData }
        default: false
        }
    }
}

/// plistlib's verdict on one file, as Tests/Fidelity/outside_plists.py writes it.
struct OutsideVerdict {
    enum Reading {
        case value(Value)
        case unsupported(String)
        case deep(String)
        case refused(String)
    }

    let source: String
    let reading: Reading

    init(_ json: Data) throws {
        guard let object = try JSONSerialization.jsonObject(with: json) as? [String: Any] else { throw PlistFile.ParseError("not an object") }
        source = object["source"] as? String ?? "?"
        if let tagged = object["value"] {
            reading = .value(try Self.value(tagged))
        } else if let what = object["unsupported"] as? String {
            reading = .unsupported(what)
        } else if let what = object["deep"] as? String {
            reading = .deep(what)
        } else {
            reading = .refused(object["refused"] as? String ?? "?")
        }
    }

    /// A tagged tree (["i", "18446744073709551615"], ...) as a Value.
    private static func value(_ tagged: Any) throws -> Value {
        guard let pair = tagged as? [Any], pair.count == 2, let tag = pair[0] as? String else { throw PlistFile.ParseError("bad tag \(tagged)") }
        let text = pair[1] as? String
        switch (tag, text) {
        case ("s", let text?): return .string(text)
        case ("b", let text?): return .bool(text == "true")
        case ("i", let text?):
            guard let integer = Value.integer(parsing: text) else { throw PlistFile.ParseError("plistlib read an integer outside the plist range: \(text)") }
            return integer
        case ("r", let text?):
            guard let real = Double(text) else { throw PlistFile.ParseError("bad real \(text)") }
            return .real(real)
        case ("d", let text?):
            guard let micros = Int64(text) else { throw PlistFile.ParseError("bad date \(text)") }
            return .date(Date(timeIntervalSinceReferenceDate: Double(micros) / 1_000_000))
        case ("x", let text?):
            var bytes: [UInt8] = []
            var index = text.startIndex
            while index < text.endIndex {
                let next = text.index(index, offsetBy: 2)
                bytes.append(UInt8(text[index..<next], radix: 16)!)
                index = next
            }
            return .data(Data(bytes))
        case ("a", _):
            return .array(try (pair[1] as? [Any] ?? []).map(value))
        case ("o", _):
            var members: [String: Value] = [:]
            for member in pair[1] as? [[Any]] ?? [] {
                guard member.count == 2, let key = member[0] as? String else { throw PlistFile.ParseError("bad member \(member)") }
                members[key] = try value(member[1])
            }
            return .dictionary(members)
        default:
            throw PlistFile.ParseError("unknown tag \(tag)")
        }
    }

    /// Whether two values are the same plist: reals by their bits (any NaN is NaN), dates to the
    /// microsecond plistlib keeps, keys by their bytes.
    static func same(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
        case (.date(let x), .date(let y)): return abs(x.timeIntervalSinceReferenceDate - y.timeIntervalSinceReferenceDate) <= 1.5e-6
        case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.dictionary(let x), .dictionary(let y)):
            let byBytes = { (members: [String: Value]) in Dictionary(uniqueKeysWithValues: members.map { (Array($0.key.utf8), $0.value) }) }
            let (left, right) = (byBytes(x), byBytes(y))
            return left.count == right.count && left.allSatisfy { key, value in right[key].map { same(value, $0) } ?? false }
        default: return a == b
        }
    }
}
