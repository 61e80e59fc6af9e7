import AgentDecisions
import PlistFormat
import SyncCore
import SyncProtocol
import XCTest

/// The rules for a server state against what was last synced and the file here, both ways
/// round (syncthing's habit: A wins when A is newer, B when B is).
final class RemoteChangeTests: XCTestCase {
    private let base: Fields = ["name": .string("Ada"), "phone": .string("1")]
    private func bytes(_ fields: Fields) -> [UInt8] { PlistFile.encode(.dictionary(fields), as: .xml) }
    private func synced(_ fields: Fields?, rev: Int64 = 3) -> SyncedRecord {
        SyncedRecord(rev: rev, position: "a0", fieldsJSON: fields.map { ValueJSON.encode(fields: $0) }, fileHash: fields.map { ContentHash.of(bytes($0)) }, format: .xml)
    }
    private func remote(_ fields: Fields?, rev: Int64, position: String? = "a0") -> RemoteState {
        RemoteState(rev: rev, position: fields == nil ? nil : position, fields: fields)
    }
    private func action(_ change: RemoteChange) -> RemoteChange.Action? {
        if case .apply(_, let action) = change { action } else { nil }
    }

    func testANewerStateIsTakenWhenNothingWasTypedHereAndMergedWhenSomethingWas() {
        let theirs: Fields = ["name": .string("Ada"), "phone": .string("2")]
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 4), synced: synced(base), local: bytes(base), context: .init())),
                       .take(theirs, keepFile: true))
        let mine: Fields = ["name": .string("Ada L."), "phone": .string("1")]
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 4), synced: synced(base), local: bytes(mine), context: .init())),
                       .merge(local: bytes(mine), remote: theirs))
    }

    /// The path leads to a twin's file (a folding file system): the state is kept without a file
    /// of its own, whatever the file there holds.
    func testAStateWhosePathLeadsToATwinsFileIsRecordedWithoutAFile() {
        let twins: Fields = ["name": .string("the twin")]
        XCTAssertEqual(RemoteChange.decide(remote(base, rev: 2), synced: nil, local: bytes(twins), context: .init(nameClash: true)),
                       .nameClash(SyncedRecord(rev: 2, position: "a0", fieldsJSON: ValueJSON.encode(fields: base), fileHash: SyncedRecord.nameClash, format: .xml)))
        XCTAssertEqual(RemoteChange.decide(remote(nil, rev: 3), synced: nil, local: bytes(twins), context: .init(nameClash: true)),
                       .nameClash(SyncedRecord(rev: 3, position: nil, fieldsJSON: nil, fileHash: nil, format: .xml)))
        // Simulation seed 212: a change line sent again after a newer one is old news here too.
        var recorded = synced(base, rev: 2)
        recorded.fileHash = SyncedRecord.nameClash
        XCTAssertEqual(RemoteChange.decide(remote(twins, rev: 1), synced: recorded, local: bytes(twins), context: .init(nameClash: true)), .nothingNew(movedTo: nil))
    }

    func testAnEditBeatsADeleteWhicheverSideMadeTheEdit() {
        // Deleted there, edited here: the edit stays and goes up again.
        let mine: Fields = ["name": .string("Ada"), "phone": .string("9")]
        guard case .apply(let next, .keepEdit) = RemoteChange.decide(remote(nil, rev: 4), synced: synced(base), local: bytes(mine), context: .init())
        else { return XCTFail() }
        XCTAssertEqual(next.rev, 4)
        XCTAssertNil(next.fileHash, "the file is read as an edit of the tombstone whatever it holds, even the bytes last synced (simulation seed 412887: the edit was cancelled)")
        // Deleted here, edited there: the record comes back.
        let theirs: Fields = ["name": .string("Ada"), "phone": .string("2")]
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 4), synced: synced(base), local: nil, context: .init())), .restore(theirs))
        // Deleted here, only moved there (a new rev, the same fields): the delete stands.
        guard case .apply(let kept, .keepDelete) = RemoteChange.decide(remote(base, rev: 4, position: "Zz"), synced: synced(base), local: nil, context: .init())
        else { return XCTFail("a move does not beat a delete") }
        XCTAssertEqual(kept.rev, 4)
        XCTAssertNotNil(kept.fileHash, "the missing file is read as a delete of rev 4")
        // Deleted on both sides, or there with nothing typed here.
        XCTAssertEqual(action(RemoteChange.decide(remote(nil, rev: 4), synced: synced(base), local: nil, context: .init())), .bothDeleted)
        XCTAssertEqual(action(RemoteChange.decide(remote(nil, rev: 4), synced: synced(base), local: bytes(base), context: .init())), .remove)
    }

    func testOwnChangesComingBackChangeNothingButThePosition() {
        XCTAssertEqual(RemoteChange.decide(remote(base, rev: 3), synced: synced(base), local: bytes(base), context: .init()), .nothingNew(movedTo: nil))
        var moved = synced(base)
        moved.position = "Zz"
        XCTAssertEqual(RemoteChange.decide(remote(base, rev: 3, position: "Zz"), synced: synced(base), local: bytes(base), context: .init()),
                       .nothingNew(movedTo: moved))
        XCTAssertEqual(RemoteChange.decide(remote(base, rev: 2), synced: synced(base), local: bytes(base), context: .init()), .nothingNew(movedTo: nil))
        XCTAssertEqual(RemoteChange.decide(RemoteState(rev: 0, position: nil, fields: nil), synced: synced(base), local: nil, context: .init()), .forget)
    }

    func testAFileBeingSavedWaitsAndAnOldBrokenOneDoesNot() {
        let half = Array(bytes(base).prefix(20))
        let theirs: Fields = ["name": .string("Ada"), "phone": .string("2")]
        XCTAssertEqual(RemoteChange.decide(remote(theirs, rev: 4), synced: synced(base), local: half, context: .init(fileAge: 0.5)), .waitForSave)
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 4), synced: synced(base), local: half, context: .init(fileAge: 60))),
                       .merge(local: half, remote: theirs))
    }

    /// Issue 18 item 8, both ways: a state of a restored backup older than what was synced
    /// here becomes the base (this mirror pushes), one made since the restore is news.
    func testOnARestoredStoreTheBackupsStatesAreTheBaseAndLaterOnesAreNews() {
        let backup: Fields = ["name": .string("Ada"), "phone": .string("0")]
        let rebasing = RemoteChange.Context(seq: 5, rebasing: true, restoredSeq: 10)
        guard case .rebase(let rebased) = RemoteChange.decide(remote(backup, rev: 2), synced: synced(base), local: bytes(base), context: rebasing)
        else { return XCTFail() }
        XCTAssertEqual(rebased.rev, 2)
        XCTAssertEqual(rebased.fileHash, SyncedRecord.compareFields, "the file is compared, then pushed as an edit of rev 2")
        let later = RemoteChange.Context(seq: 12, rebasing: true, restoredSeq: 10)
        let theirs: Fields = ["name": .string("Ada"), "phone": .string("5")]
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 2), synced: synced(nil), local: nil, context: later)), .take(theirs, keepFile: false),
                       "an edit made since the restore beats this mirror's delete")
    }

    /// Simulation seed 100066 (with restores): another mirror pushed the same content after
    /// the restore, under a lower rev than this mirror had synced. Kept at the old rev, this
    /// mirror took a later delete (rev 4 < 6) for old news and kept the record for ever.
    func testOnARestoredStoreTheSameContentUnderALowerRevBecomesTheBase() {
        let later = RemoteChange.Context(seq: 12, rebasing: true, restoredSeq: 10)
        guard case .rebase(let rebased) = RemoteChange.decide(remote(base, rev: 3), synced: synced(base, rev: 6), local: bytes(base), context: later)
        else { return XCTFail() }
        XCTAssertEqual(rebased.rev, 3)
        XCTAssertEqual(rebased.fileHash, synced(base).fileHash, "the file still shows what was synced")
        XCTAssertEqual(action(RemoteChange.decide(RemoteState(rev: 4, position: nil, fields: nil), synced: rebased, local: bytes(base), context: .init())),
                       .remove, "the next change is news")
    }

    /// Simulation seed 215705 (restores): a mirror that synced a delete before the backup's
    /// era ended brought it forward onto the restored store; this mirror synced a newer edit of
    /// the record after that delete. The edit goes up (it would have, had this mirror
    /// reconnected first), not the file removed.
    func testOnARestoredStoreADeleteBroughtForwardDoesNotBeatARecordSyncedHere() {
        let later = RemoteChange.Context(seq: 13, rebasing: true, restoredSeq: 10)
        guard case .apply(let next, let decided) = RemoteChange.decide(remote(nil, rev: 6), synced: synced(base, rev: 11), local: bytes(base), context: later)
        else { return XCTFail() }
        XCTAssertEqual(decided, .keepEdit)
        XCTAssertEqual(next.rev, 6)
        XCTAssertNil(next.fileHash, "the file goes up as the record's new state")
        XCTAssertEqual(action(RemoteChange.decide(remote(nil, rev: 6), synced: synced(base), local: bytes(base), context: .init())), .remove,
                       "not rebasing: a delete is a delete")
    }

    /// Simulation seed 2412 (issue 46, on the server's own store faults): on a folding file
    /// system a twin's state was recorded without a file of its own here (its name was the other
    /// twin's); once that file was gone, the app saved a file under the name, made without ever
    /// seeing the recorded state. The next change merged the file against that state as if it
    /// were the file's base: the phone the app never saw counted as replaced here on purpose and
    /// was lost. A state never written here is no base: the merge has no common base.
    func testAFileMadeWhereATwinsStateWasRecordedWithoutAFileMergesWithNoCommonBase() {
        let recorded: Fields = ["name": .string("a"), "phone": .string("v42")]
        var neverShown = synced(recorded, rev: 1)
        neverShown.fileHash = SyncedRecord.nameClash
        let saved: Fields = ["name": .string("b"), "phone": .string("x")]
        let server: Fields = ["name": .string("c"), "phone": .string("v42")]
        XCTAssertEqual(action(RemoteChange.decide(remote(server, rev: 2), synced: neverShown, local: bytes(saved), context: .init())),
                       .merge(local: bytes(saved), remote: server, baseKnown: false))
    }

    /// Simulation seed 389 (issue 46): after a restore, another mirror pushed its older copy of
    /// a record before this one reconnected; this mirror took it as an ordinary change, and the
    /// phone it had synced after the backup was left only in its kept versions. Now the file
    /// merges with that state with no common base: fields they agree on stay, every other is a
    /// conflict (the server's value in the file, this one's in a conflict copy).
    func testOnARestoredStoreAnotherMirrorsOlderCopyDoesNotReplaceWhatWasSyncedHere() {
        let later = RemoteChange.Context(seq: 26, rebasing: true, restoredSeq: 21)
        let mine: Fields = ["name": .string("Ada"), "phone": .string("41")]
        let theirs: Fields = ["name": .string("Ada"), "phone": .string("17")]
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 5), synced: synced(mine, rev: 6), local: bytes(mine), context: later)),
                       .merge(local: bytes(mine), remote: theirs, baseKnown: false))
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 7), synced: synced(mine, rev: 6), local: bytes(mine), context: .init(seq: 26))),
                       .take(theirs, keepFile: true), "not rebasing: a newer state is taken")
        let merged = ThreeWayMerge.merge(base: nil, local: mine, remote: theirs)
        XCTAssertEqual(merged.conflictingKeys, ["phone"], "the phone typed here goes to a conflict copy, not only to the kept versions")
    }

    /// Simulation seed 1101 (a folding file system, a full disk): a twin recorded without a
    /// file of its own got its name back, but its file could not be written; a later change
    /// that left its fields as they were read as "deleted here, only moved there", and the
    /// delete went up. A record with no file here is written, never deleted.
    func testARecordThatHadNoFileOfItsOwnHereIsWrittenNotDeleted() {
        var clashing = synced(base, rev: 4)
        clashing.fileHash = SyncedRecord.nameClash
        XCTAssertEqual(action(RemoteChange.decide(remote(base, rev: 6), synced: clashing, local: nil, context: .init())), .take(base, keepFile: false))
        XCTAssertEqual(action(RemoteChange.decide(remote(base, rev: 6), synced: synced(base, rev: 4), local: nil, context: .init())), .keepDelete,
                       "a record whose file was deleted here stays deleted")
    }

    func testTwoCopiesOfOneNameDoNotNest() {
        let context = RemoteChange.Context(isConflictCopies: true)
        let theirs: Fields = ["phone": .string("theirs")]
        XCTAssertEqual(RemoteChange.decide(remote(theirs, rev: 1), synced: nil, local: bytes(["phone": .string("mine")]), context: context), .moveCopyAside)
        XCTAssertEqual(action(RemoteChange.decide(remote(theirs, rev: 1), synced: nil, local: bytes(theirs), context: context)),
                       .merge(local: bytes(theirs), remote: theirs), "the same copy: merged into itself")
    }

    func testShadowFilesOfAppFilesAreBinary() {
        guard case .apply(let next, _) = RemoteChange.decide(remote(base, rev: 1), synced: nil, local: nil, context: .init(isShadow: true))
        else { return XCTFail() }
        XCTAssertEqual(next.format, .binary)
    }
}
