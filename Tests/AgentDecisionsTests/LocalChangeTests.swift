import AgentDecisions
import PlistFormat
import SyncCore
import SyncProtocol
import XCTest

/// The rules for a record's file against what was last synced, without files or a server.
final class LocalChangeTests: XCTestCase {
    private func bytes(_ fields: Fields, _ format: PlistFile.Format = .xml) -> [UInt8] {
        PlistFile.encode(.dictionary(fields), as: format)
    }

    private func synced(_ fields: Fields?, rev: Int64 = 3, file: [UInt8]?) -> SyncedRecord {
        SyncedRecord(rev: rev, position: "a0", fieldsJSON: fields.map { ValueJSON.encode(fields: $0) }, fileHash: file.map(ContentHash.of), format: .xml)
    }

    private func decide(_ file: LocalFile, _ record: SyncedRecord?, refused: Set<String> = [], deleteRefused: Bool = false, limit: Int = 262_144) -> LocalChange {
        LocalChange.decide(collection: "c", id: "Ada", file: file, synced: record, refusedHashes: refused, deleteRefused: deleteRefused,
                           maxRecordBytes: limit, maxLineBytes: 1 << 20)
    }

    func testAnEditIsPushedAgainstTheSyncedRevAndANewFileAsACreate() {
        let old = bytes(["phone": .string("1")])
        let edited = bytes(["phone": .string("2")])
        guard case .push(let command, _, let json, _) = decide(.file(edited), synced(["phone": .string("1")], file: old)) else { return XCTFail() }
        XCTAssertEqual(command, .put(collection: "c", id: "Ada", baseRev: 3, fieldsJSON: #"{"phone":"2"}"#))
        XCTAssertEqual(json, #"{"phone":"2"}"#)
        guard case .push(let create, _, _, _) = decide(.file(edited), nil) else { return XCTFail() }
        XCTAssertEqual(create, .put(collection: "c", id: "Ada", baseRev: 0, fieldsJSON: #"{"phone":"2"}"#))
    }

    func testTheFileAsSyncedOrRefusedIsLeftAlone() {
        let file = bytes(["phone": .string("1")])
        XCTAssertEqual(decide(.file(file), synced(["phone": .string("1")], file: file)), .unchanged)
        let edited = bytes(["phone": .string("2")])
        XCTAssertEqual(decide(.file(edited), synced(["phone": .string("1")], file: file), refused: [ContentHash.of(edited)]), .unchanged)
    }

    func testTheSameFieldsInOtherBytesAreAdoptedNotPushed() {
        let fields: Fields = ["phone": .string("1")]
        let binary = bytes(fields, .binary)
        XCTAssertEqual(decide(.file(binary), synced(fields, file: bytes(fields))), .adopt(hash: ContentHash.of(binary), format: .binary))
    }

    func testAMissingFileIsADeleteOnlyWhenItWasLiveHereAndNotRefused() {
        let file = bytes(["phone": .string("1")])
        XCTAssertEqual(decide(.missing, synced(["phone": .string("1")], file: file)), .missing(deletable: true))
        XCTAssertEqual(decide(.missing, synced(["phone": .string("1")], file: file), deleteRefused: true), .missing(deletable: false))
        XCTAssertEqual(decide(.missing, synced(nil, file: nil)), .missing(deletable: false), "a tombstone")
        XCTAssertEqual(decide(.missing, nil), .missing(deletable: false))
    }

    /// A record that waited for a twin's name (a folding file system) has no file to delete; once
    /// the name is free, its file is written.
    func testARecordWaitingForItsNameIsWrittenNotDeleted() {
        var waiting = synced(["phone": .string("1")], file: nil)
        waiting.fileHash = SyncedRecord.nameClash
        XCTAssertFalse(waiting.missingFileIsADelete)
        XCTAssertEqual(decide(.missing, waiting), .writeSynced)
        waiting.fieldsJSON = nil
        XCTAssertEqual(decide(.missing, waiting), .missing(deletable: false))
    }

    func testHalfAFileLinksFoldersAndOversizedFilesAreNeverPushed() {
        let file = bytes(["phone": .string("1")])
        guard case .unparseable = decide(.file(Array(file.prefix(file.count / 2))), synced(["phone": .string("1")], file: file)) else { return XCTFail() }
        XCTAssertEqual(decide(.link, nil), .symbolicLink)
        XCTAssertEqual(decide(.notAFile, nil), .notAFile)
        guard case .tooLarge = decide(.file(bytes(["text": .string(String(repeating: "x", count: 500))])), nil, limit: 100) else { return XCTFail() }
    }

    func testAWholeSecondXMLDateKeepsTheFractionThatWasSynced() {
        let precise = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
        let xml = bytes(["when": .date(precise), "phone": .string("2")])
        let record = synced(["when": .date(precise), "phone": .string("1")], file: bytes(["when": .date(precise), "phone": .string("1")]))
        guard case .push(_, _, let json, _) = decide(.file(xml), record) else { return XCTFail() }
        XCTAssertTrue(json.contains("40.25Z"), json)
    }
}
