import SyncCore
import SyncProtocol
import XCTest

/// What a node tells the others after each administrative operation commits: every change to
/// accounts (over the wire, invitations included) makes the other nodes re-read them at once;
/// without it they learnt of a revoked invitation only at their once-a-second check.
final class ClusterEventTests: XCTestCase {
    func testEveryAccountChangeTellsTheOtherNodes() {
        let invitation = Invitation(hash: String(repeating: "a", count: 64), collection: "team", role: .write, madeBy: "root", note: nil,
                                    createdAt: 0, expiresAt: 60, usesAllowed: 1, uses: 0)
        let token = InvitationToken(hash: "h", label: "l", endsWithBrowser: false)
        let changes: [StoreOperation] = [
            .addUser(name: "bob", passwordHash: "x", isAdmin: false), .setPassword(user: "bob", passwordHash: "y", keepingToken: nil),
            .removeUser(name: "bob"), .setServerAdmin(user: "bob", isAdmin: true), .revokeInvitation(collection: "team", id: "aaaaaaaaaaaa"),
            .redeemInvitation(hash: invitation.hash, user: "carol", newPasswordHash: "z", token: token, at: 1),
        ]
        for operation in changes {
            XCTAssertTrue(operation.changesAccounts, "\(operation)")
            XCTAssertEqual(ClusterEvent.after(operation, node: "n1")?.kind, .accountsChanged, "\(operation)")
        }
        // Making an invitation changes no one's access: nothing to re-read.
        XCTAssertNil(ClusterEvent.after(.createInvitation(invitation), node: "n1"))
        XCTAssertEqual(ClusterEvent(payload: ClusterEvent(node: "n1", .accountsChanged).payload), ClusterEvent(node: "n1", .accountsChanged))
    }
}
