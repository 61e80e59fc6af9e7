import AgentDecisions
import SyncCore
import SyncProtocol
import XCTest

/// The rules for a save of an app's whole-list file against the versions the agent remembers.
final class AppFileSaveTests: XCTestCase {
    private func row(_ name: String, _ phone: String) -> Fields { ["name": .string(name), "phone": .string(phone)] }

    /// The app loaded v0 (which it saved), the agent then wrote v1 with a change from elsewhere.
    private var history: [AppFileVersion] {
        [AppFileVersion(records: ["a": row("Ada", "1"), "g": row("Grace", "1")], order: ["a", "g"], byApp: true),
         AppFileVersion(records: ["a": row("Ada", "2"), "g": row("Grace", "1")], order: ["g", "a"], byApp: false)]
    }
    private var shadow: [RecordID: Fields] { ["a": row("Ada", "2"), "g": row("Grace", "1")] }

    func testAStaleSaveChangesOnlyWhatTheAppChangedAndKeepsTheMoveItNeverSaw() {
        // The app saves its old load (Ada's old phone, the old order) with Grace edited.
        let save = AppFileSave.read([("a", row("Ada", "1")), ("g", row("Grace", "9"))], versions: history, latestOrder: ["g", "a"], shadow: shadow)
        XCTAssertEqual(save.writes, [AppFileSave.Write(id: "g", fields: row("Grace", "9"), keepReplaced: false)])
        XCTAssertEqual(save.removes, [])
        XCTAssertEqual(save.order, ["g", "a"], "the move made elsewhere stays")
        XCTAssertTrue(save.missed, "the file is rebuilt to show what the save missed")
    }

    func testAnEditOfAFieldThatChangedElsewhereKeepsTheValueItReplaces() {
        let save = AppFileSave.read([("g", row("Grace", "1")), ("a", row("Ada", "3"))], versions: history, latestOrder: ["g", "a"], shadow: shadow)
        XCTAssertEqual(save.writes, [AppFileSave.Write(id: "a", fields: row("Ada", "3"), keepReplaced: true)])
        XCTAssertFalse(save.missed)
        XCTAssertNil(save.order)
    }

    /// Simulation seed 161: an app cancelled its own edit (its last save) just as a change from
    /// elsewhere reached the shadow, before the file showed it; the cancel replaced the value
    /// it never saw, and nothing kept it.
    func testASaveOverAChangeTheFileDidNotShowYetKeepsTheValueItReplaces() {
        let saved = [AppFileVersion(records: ["a": row("Ada", "1"), "g": row("Grace", "1")], order: ["a", "g"], byApp: true),
                     AppFileVersion(records: ["a": row("Ada", "2"), "g": row("Grace", "1")], order: ["a", "g"], byApp: true)]
        var arrived = shadow
        arrived["a"] = row("Ada", "5")
        let save = AppFileSave.read([("a", row("Ada", "1")), ("g", row("Grace", "1"))], versions: saved, latestOrder: ["a", "g"], shadow: arrived)
        XCTAssertEqual(save.writes, [AppFileSave.Write(id: "a", fields: row("Ada", "1"), keepReplaced: true)])
        // The same cancel with nothing arriving meanwhile replaces only the app's own value.
        let quiet = AppFileSave.read([("a", row("Ada", "1")), ("g", row("Grace", "1"))], versions: saved, latestOrder: ["a", "g"], shadow: shadow)
        XCTAssertEqual(quiet.writes, [AppFileSave.Write(id: "a", fields: row("Ada", "1"), keepReplaced: false)])
    }

    /// Simulation seed 176: the app made a row the file never showed while a record of the same
    /// id came from elsewhere; the app's row replaced it, and nothing kept it.
    func testARowTheAppMakesOverARecordTheFileNeverShowedKeepsThatRecord() {
        var arrived = shadow
        arrived["z"] = row("Zoe", "from elsewhere")
        let save = AppFileSave.read([("g", row("Grace", "1")), ("a", row("Ada", "2")), ("z", row("Zoe", "typed here"))], versions: history,
                                    latestOrder: ["g", "a"], shadow: arrived)
        XCTAssertEqual(save.writes, [AppFileSave.Write(id: "z", fields: row("Zoe", "typed here"), keepReplaced: true)])
        let fresh = AppFileSave.read([("g", row("Grace", "1")), ("a", row("Ada", "2")), ("z", row("Zoe", "typed here"))], versions: history,
                                     latestOrder: ["g", "a"], shadow: shadow)
        XCTAssertEqual(fresh.writes, [AppFileSave.Write(id: "z", fields: row("Zoe", "typed here"), keepReplaced: false)], "a new row replaces nothing")
    }

    /// Simulation seed 2418: a crash cost the history the agent's write of a change from
    /// elsewhere; found at start, the file is remembered as the agent's, with nothing before it.
    /// The app's next save, from a load made before that change, replaced it unseen. With the
    /// gap known, what a save replaces is kept.
    func testAfterAGapInTheHistoryWhatASaveReplacesIsKept() {
        let found = [AppFileVersion(records: ["a": row("Ada", "from elsewhere")], order: ["a"], byApp: false)]
        let stale = AppFileSave.read([("a", row("Ada", "old load, edited"))], versions: found, latestOrder: ["a"], shadow: ["a": row("Ada", "from elsewhere")],
                                     historyGap: true)
        XCTAssertEqual(stale.writes, [AppFileSave.Write(id: "a", fields: row("Ada", "old load, edited"), keepReplaced: true)])
        let plain = AppFileSave.read([("a", row("Ada", "old load, edited"))], versions: found, latestOrder: ["a"], shadow: ["a": row("Ada", "from elsewhere")])
        XCTAssertEqual(plain.writes.map(\.keepReplaced), [false], "a file the app only ever loaded as the agent wrote it")
    }

    /// Simulation seed 8826: a save from a load made before a row was deleted elsewhere moved
    /// that row; it is not brought back (only moved), and its place stayed in the order, so the
    /// app's later edit that did bring it back found it placed already and its drag was lost.
    func testTheOrderOfASaveListsOnlyRowsTheCollectionHolds() {
        var versions = history
        versions.append(AppFileVersion(records: ["a": row("Ada", "2")], order: ["a"], byApp: false))
        let save = AppFileSave.read([("g", row("Grace", "1")), ("a", row("Ada", "2"))], versions: versions, latestOrder: ["a"], shadow: ["a": row("Ada", "2")])
        XCTAssertEqual(save.writes, [], "a row deleted elsewhere and only moved here is not brought back")
        XCTAssertEqual(save.order, ["a"])
    }

    func testARowTheAppDeletesGoesAndOneAddedElsewhereStays() {
        var versions = history
        versions.append(AppFileVersion(records: ["a": row("Ada", "2"), "g": row("Grace", "1"), "z": row("Zoe", "1")], order: ["g", "a", "z"], byApp: false))
        var now = shadow
        now["z"] = row("Zoe", "1")
        // A save from the load before Zoe came, without Grace.
        let save = AppFileSave.read([("a", row("Ada", "2"))], versions: versions, latestOrder: ["g", "a", "z"], shadow: now)
        XCTAssertEqual(save.removes, ["g"])
        XCTAssertTrue(save.missed, "Zoe is shown again")
    }

    /// A row changed elsewhere after the file last showed it (the change is in the shadow, not
    /// yet in the file) and deleted by the app: the edit beats the delete (simulation seed 24741).
    func testARowChangedElsewhereSinceTheFileShowedItIsNotDeleted() {
        var now = shadow
        now["g"] = row("Grace", "7")
        let save = AppFileSave.read([("a", row("Ada", "2"))], versions: history, latestOrder: ["g", "a"], shadow: now)
        XCTAssertEqual(save.removes, [])
        XCTAssertTrue(save.missed, "the file is rebuilt to show the row with its new value")
        let unchanged = AppFileSave.read([("a", row("Ada", "2"))], versions: history, latestOrder: ["g", "a"], shadow: shadow)
        XCTAssertEqual(unchanged.removes, ["g"], "a row as the file showed it is deleted")
    }

    /// Simulation seeds 289 and 1574 (stale-load apps): a row changed elsewhere after the
    /// app's last save, missing from the next save. Whether the app loaded the file before or
    /// after that change cannot be told (a missing row shows nothing): the delete goes through
    /// (a person who saw the change and deleted the row gets what they asked for), and the
    /// record is kept as a version (one who never saw it loses nothing).
    func testARowChangedElsewhereSinceTheAppsLastSaveIsDeletedAndKept() {
        var versions = history
        var edited = versions[1].records
        edited["g"] = row("Grace", "5")
        versions.append(AppFileVersion(records: edited, order: ["g", "a"], byApp: false))
        let save = AppFileSave.read([("a", row("Ada", "2"))], versions: versions, latestOrder: ["g", "a"], shadow: edited)
        XCTAssertEqual(save.removes, ["g"])
        XCTAssertEqual(save.keepRemoved, ["g"], "Grace changed after the app's last save")
        versions.append(AppFileVersion(records: edited, order: ["g", "a"], byApp: true))
        let seen = AppFileSave.read([("a", row("Ada", "2"))], versions: versions, latestOrder: ["g", "a"], shadow: edited)
        XCTAssertEqual(seen.removes, ["g"])
        XCTAssertEqual(seen.keepRemoved, [], "once the app has saved the change, the delete is plain")
    }

    /// Simulation seed 205904 (stale-load apps, agent crashes): the history that remembered
    /// the app's save was lost in a crash, and the file found at start is the agent's own
    /// write. With no save of the app remembered, a row deleted is kept.
    func testWithNoSaveOfTheAppRememberedADeletedRowIsKept() {
        let written = [AppFileVersion(records: ["e": row("Edsger", "5")], order: ["e"], byApp: false)]
        let save = AppFileSave.read([("a", row("Ada", "1"))], versions: written, latestOrder: ["e"], shadow: ["e": row("Edsger", "5")])
        XCTAssertEqual(save.removes, ["e"])
        XCTAssertEqual(save.keepRemoved, ["e"])
    }

    func testACancelledEditGoesThrough() {
        // The app itself saved phone 2 (newest version is its own), then goes back to 1.
        let versions = [AppFileVersion(records: ["a": row("Ada", "1")], order: ["a"], byApp: true),
                        AppFileVersion(records: ["a": row("Ada", "2")], order: ["a"], byApp: true)]
        let save = AppFileSave.read([("a", row("Ada", "1"))], versions: versions, latestOrder: ["a"], shadow: ["a": row("Ada", "2")])
        XCTAssertEqual(save.writes.map(\.fields), [row("Ada", "1")])
        XCTAssertFalse(save.missed)
    }

    /// Simulation seed 51 (the order-intent check): the app saved the order the agent had
    /// written (it loaded it), then dragged a row back to where it was before that write. The
    /// app saw the newest order, so the drag is a move, not a stale save going back.
    func testADragBackToAnOlderOrderAfterTheAppSavedTheNewestIsAMove() {
        var versions = history
        versions.append(AppFileVersion(records: versions[1].records, order: ["g", "a"], byApp: true))
        let save = AppFileSave.read([("a", row("Ada", "2")), ("g", row("Grace", "1"))], versions: versions, latestOrder: ["g", "a"], shadow: shadow)
        XCTAssertEqual(save.order, ["a", "g"])
        XCTAssertFalse(save.missed)
        // The same values, the field this time: the app saved Ada's new phone, then typed the old one.
        let edit = AppFileSave.read([("g", row("Grace", "1")), ("a", row("Ada", "1"))], versions: versions, latestOrder: ["g", "a"], shadow: shadow)
        XCTAssertEqual(edit.writes.map(\.fields), [row("Ada", "1")])
    }

    func testARowDeletedElsewhereComesBackOnlyWhenTheAppEditedIt() {
        let versions = [AppFileVersion(records: ["a": row("Ada", "1")], order: ["a"], byApp: true),
                        AppFileVersion(records: [:], order: [], byApp: false)]
        let untouched = AppFileSave.read([("a", row("Ada", "1"))], versions: versions, latestOrder: [], shadow: [:])
        XCTAssertEqual(untouched.writes, [])
        XCTAssertTrue(untouched.missed)
        let edited = AppFileSave.read([("a", row("Ada", "5"))], versions: versions, latestOrder: [], shadow: [:])
        XCTAssertEqual(edited.writes.map(\.id), ["a"], "an edit beats a delete")
    }

    /// Simulation seed 4614 (the order-intent check): a move from elsewhere reached the shadow
    /// but not yet the file when the app saved the file with a row added. The save moved
    /// nothing, so its new row is placed into the shadow's order and the move stays.
    func testASaveThatOnlyAddsARowKeepsAMoveTheFileDoesNotShowYet() {
        let versions = [AppFileVersion(records: ["e": row("Edsger", "1"), "g": row("Grace", "1"), "a": row("Ada", "1")], order: ["e", "g", "a"], byApp: false)]
        let save = AppFileSave.read([("e", row("Edsger", "1")), ("g", row("Grace", "1")), ("n", row("Alan", "1")), ("a", row("Ada", "1"))],
                                    versions: versions, latestOrder: ["e", "g", "a"], shadow: versions[0].records, shadowOrder: ["e", "a", "g"])
        XCTAssertEqual(save.order, ["e", "a", "g", "n"], "Ada stays before Grace; Alan goes after Grace, as in the save")
        XCTAssertEqual(save.writes.map(\.id), ["n"])
    }

    func testNewRowsArePlacedAfterTheirNeighbourInTheSave() {
        XCTAssertEqual(AppFileSave.keepingOrder(of: ["g", "a"], placing: ["a", "n", "g"]), ["g", "a", "n"])
        XCTAssertEqual(AppFileSave.keepingOrder(of: ["g", "a"], placing: ["n", "a", "g"]), ["n", "g", "a"])
    }
}
