import AgentDecisions
import XCTest

/// The rules for collections coming and going (issue 18 items 9 and 10 among them).
final class CollectionLifecycleTests: XCTestCase {
    func testAFolderTheServerDoesNotListIsMadeUnlessItWasSyncedBefore() {
        XCTAssertEqual(CollectionLifecycle.unlisted(wasMirrored: false, rebasing: false), .create)
        XCTAssertEqual(CollectionLifecycle.unlisted(wasMirrored: true, rebasing: false), .droppedWhileAway,
                       "making it again would undo a drop made while the agent was away (item 10)")
        XCTAssertEqual(CollectionLifecycle.unlisted(wasMirrored: true, rebasing: true), .create,
                       "a store restored from a backup older than the collection gets it back")
    }

    func testAMirroredCollectionWhoseFolderIsGoneIsDetachedNotDeleted() {
        XCTAssertEqual(CollectionLifecycle.start(wasMirrored: true, folderExists: false), .detach)
        XCTAssertEqual(CollectionLifecycle.start(wasMirrored: false, folderExists: false), .mirror, "a new one gets its folder")
        XCTAssertEqual(CollectionLifecycle.start(wasMirrored: true, folderExists: true), .mirror)
    }

    func testARenameMovesTheFolderUnlessAnAppFileOrAFolderOfTheNewNameIsThere() {
        XCTAssertEqual(CollectionLifecycle.rename(attached: true, hasFolder: true), .decided(.keepAttachedFile),
                       "an attached collection's folder is not touched")
        XCTAssertEqual(CollectionLifecycle.rename(attached: false, hasFolder: true), .moveFolder)
        XCTAssertEqual(CollectionLifecycle.rename(attached: false, hasFolder: false), .decided(.follow), "nothing to move")
        XCTAssertEqual(CollectionLifecycle.rename(folderMoved: true), .follow)
        XCTAssertEqual(CollectionLifecycle.rename(folderMoved: false), .keepFolder)
    }
}
