import Foundation
import SyncCore
import SyncProtocol
import XCTest

/// Issue 45's store operations, the same on the memory store, SQLite and PostgreSQL: accounts
/// changed over the wire, and invitations redeemed all or nothing (expired, used up, revoked).
extension StoreConformanceTests {
    func testAccountsChangedOverTheWireRaiseTheEpochAndKeepOnlyTheChangersToken() throws {
        try eachStoreWithCollection { store in
            let epoch = try store.accountsEpoch()
            XCTAssertEqual(try store.commit([.addUser(name: "carol", passwordHash: "h1", isAdmin: false)]), [.done])
            XCTAssertEqual(try store.commit([.addUser(name: "carol", passwordHash: "h2", isAdmin: true)]), [.refused(ProtocolError(.exists, "user carol exists"))])
            XCTAssertEqual(try store.commit([.createToken(hash: "t1", user: "carol", label: "laptop"), .createToken(hash: "t2", user: "carol", label: "phone", endsWithBrowser: true)]),
                           [.done, .done])
            XCTAssertEqual(try store.tokens(of: "carol").map(\.endsWithBrowser), [false, true])
            XCTAssertEqual(try store.commit([.setPassword(user: "carol", passwordHash: "h3", keepingToken: "t2")]), [.done])
            XCTAssertEqual(try store.tokens(of: "carol").map(\.hash), ["t2"], "the changer's own token stays")
            XCTAssertEqual(try store.user(named: "carol")?.passwordHash, "h3")
            XCTAssertEqual(try store.commit([.setServerAdmin(user: "carol", isAdmin: true), .setServerAdmin(user: "nobody", isAdmin: true)]),
                           [.done, .refused(ProtocolError(.notFound, "no user nobody"))])
            XCTAssertEqual(try store.users().map(\.name), ["alice", "bob", "carol"])
            XCTAssertEqual(try store.user(named: "carol")?.isAdmin, true)
            XCTAssertEqual(try store.commit([.grant(collection: "c", user: "carol", role: .write), .removeUser(name: "carol")]), [.done, .done])
            XCTAssertNil(try store.user(named: "carol"))
            XCTAssertEqual(try store.tokens(of: "carol"), [])
            XCTAssertNil(try store.collections().first { $0.name == "c" }?.members["carol"], "a removed user's memberships go with them")
            XCTAssertEqual(try store.accountsEpoch(), epoch + 4, "each change that took effect raised the epoch")
        }
    }

    func testAnInvitationIsRedeemedAllOrNothingUntilItExpiresOrIsUsedUp() throws {
        try eachStoreWithCollection { store in
            let invitation = Invitation(hash: String(repeating: "ab", count: 32), collection: "c", role: .write, madeBy: "alice", note: "for carol",
                                        createdAt: 1_000, expiresAt: 2_000, usesAllowed: 2, uses: 0)
            XCTAssertEqual(try store.commit([.createInvitation(invitation)]), [.done])
            XCTAssertEqual(try store.invitation(hash: invitation.hash), invitation)
            let token = { (hash: String) in InvitationToken(hash: hash, label: "join", endsWithBrowser: false) }
            // Expired, or a name taken: nothing happens (no use counted, no account, no token).
            XCTAssertEqual(try store.commit([.redeemInvitation(hash: invitation.hash, user: "carol", newPasswordHash: "p", token: token("t0"), at: 2_000)]),
                           [.refused(ProtocolError(.expired, "this invitation has expired; ask for a new one"))])
            XCTAssertEqual(try store.commit([.redeemInvitation(hash: invitation.hash, user: "bob", newPasswordHash: "p", token: token("t0"), at: 1_500)]),
                           [.refused(ProtocolError(.exists, "user bob exists; log in to it instead"))])
            XCTAssertNil(try store.user(named: "carol"))
            XCTAssertEqual(try store.invitation(hash: invitation.hash)?.uses, 0)
            // A new account, and an existing one who had a higher role and keeps it.
            XCTAssertEqual(try store.commit([.grant(collection: "c", user: "bob", role: .admin)]), [.done])
            XCTAssertEqual(try store.commit([
                .redeemInvitation(hash: invitation.hash, user: "carol", newPasswordHash: "p", token: token("t1"), at: 1_500),
                .redeemInvitation(hash: invitation.hash, user: "bob", newPasswordHash: nil, token: token("t2"), at: 1_500),
                .redeemInvitation(hash: invitation.hash, user: "dave", newPasswordHash: "p", token: token("t3"), at: 1_500),
            ]), [.done, .done, .refused(ProtocolError(.expired, "this invitation has been used; ask for a new one"))])
            let members = try XCTUnwrap(try store.collections().first { $0.name == "c" }).members
            XCTAssertEqual(members["carol"], .write)
            XCTAssertEqual(members["bob"], .admin)
            XCTAssertNil(try store.user(named: "dave"))
            XCTAssertEqual(try store.tokens(of: "carol").map(\.invitation), [invitation.id])
            XCTAssertEqual(try store.invitations(of: "c").map(\.uses), [2])
            // Revoked: its tokens go (the roles stay); an unknown secret or id is refused.
            XCTAssertEqual(try store.commit([.revokeInvitation(collection: "c", id: "000000000000")]),
                           [.refused(ProtocolError(.notFound, "no invitation 000000000000 to c"))])
            XCTAssertEqual(try store.commit([.revokeInvitation(collection: "c", id: invitation.id)]), [.done])
            XCTAssertEqual(try store.tokens(of: "carol"), [])
            XCTAssertEqual(try store.tokens(of: "bob"), [])
            XCTAssertNil(try store.invitation(hash: invitation.hash))
            XCTAssertEqual(try store.commit([.redeemInvitation(hash: invitation.hash, user: "erin", newPasswordHash: "p", token: token("t4"), at: 1_500)]),
                           [.refused(ProtocolError(.authFailed, "no such invitation"))])
            // A collection's invitations follow a rename and go with a drop.
            let second = Invitation(hash: String(repeating: "cd", count: 32), collection: "c", role: .read, madeBy: "alice", note: nil,
                                    createdAt: 1_000, expiresAt: 2_000, usesAllowed: 1, uses: 0)
            XCTAssertEqual(try store.commit([.createInvitation(second), .renameCollection(from: "c", to: "d")]), [.done, .done])
            XCTAssertEqual(try store.invitation(hash: second.hash)?.collection, "d")
            XCTAssertEqual(try store.commit([.dropCollection(name: "d")]), [.done])
            XCTAssertNil(try store.invitation(hash: second.hash))
            // Closed invitations go with the tombstones' purge; an open one stays.
            let used = Invitation(hash: String(repeating: "ef", count: 32), collection: "c2", role: .read, madeBy: "alice", note: nil,
                                  createdAt: 1_000, expiresAt: 9_000, usesAllowed: 1, uses: 0)
            let open = Invitation(hash: String(repeating: "12", count: 32), collection: "c2", role: .read, madeBy: "alice", note: nil,
                                  createdAt: 1_000, expiresAt: 9_000, usesAllowed: 5, uses: 0)
            let expired = Invitation(hash: String(repeating: "34", count: 32), collection: "c2", role: .read, madeBy: "alice", note: nil,
                                     createdAt: 1_000, expiresAt: 1_500, usesAllowed: 5, uses: 0)
            XCTAssertEqual(try store.commit([.createCollection(name: "c2", owner: "alice"), .createInvitation(used), .createInvitation(open), .createInvitation(expired),
                                             .redeemInvitation(hash: used.hash, user: "bob", newPasswordHash: nil, token: token("t5"), at: 1_200)]),
                           [.done, .done, .done, .done, .done])
            XCTAssertEqual(try store.commit([.purgeTombstones(updatedBefore: 2_000, history: HistoryRetention(now: 0, keepSeconds: 0))]), [.done])
            XCTAssertEqual(Set(try store.invitations(of: "c2").map(\.hash)), [open.hash], "the used-up and the expired one are purged")
        }
    }
}
