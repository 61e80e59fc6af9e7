import EventLoop
import Foundation
import ServerKit
import XCTest

/// Issue 45 over HTTP: the account endpoints need a server admin and keep the `user` commands'
/// rules; an invitation's secret redeems itself and does nothing else; "keep me signed in".
final class HTTPAccountTests: XCTestCase {
    var server: LiveServer!

    override func setUpWithError() throws {
        server = try LiveServer.running(users: [("alice", "pw"), ("bob", "bobpw")]) { configuration in
            HTTPAPITests.httpOn(&configuration)
            configuration.invitationsMakeAccounts = true
            configuration.passwordIterations = 1000
        }
        try server.addUser("root", password: "rootpw", admin: true)
    }

    override func tearDown() {
        server = nil
    }

    private func client(_ user: String, _ password: String) throws -> HTTPTestClient { try HTTPTestClient.login(port: server.httpPort, user, password) }

    private func refusal(_ response: HTTPTestResponse) -> String {
        "\(response.status) \(response.json["error"] as? String ?? "-") \(response.json["message"] as? String ?? "-")"
    }

    func testAccountEndpointsNeedAServerAdminAndKeepTheUserCommandsRules() throws {
        let alice = try client("alice", "pw")
        XCTAssertEqual(refusal(try alice.request("GET", "/api/users")), "403 FORBIDDEN alice is not a server admin; only a server admin manages accounts")
        XCTAssertEqual(try alice.request("POST", "/api/users", json: #"{"name":"eve","password":"x"}"#).status, 403)
        XCTAssertEqual(try alice.request("DELETE", "/api/users/bob").status, 403)
        let root = try client("root", "rootpw")
        XCTAssertEqual(refusal(try root.request("POST", "/api/users", json: #"{"name":"token","password":"x"}"#)),
                       "400 BAD_REQUEST 'token' is reserved (AUTH TOKEN is the token login); choose another name")
        XCTAssertEqual(try root.request("POST", "/api/users", json: #"{"name":"bad name","password":"x"}"#).status, 400)
        XCTAssertEqual(refusal(try root.request("POST", "/api/users", json: #"{"name":"carol","password":""}"#)), "400 BAD_REQUEST a password is 1 to 1024 bytes")
        XCTAssertEqual(refusal(try root.request("POST", "/api/users", json: #"{"name":"carol","password":"pw","admin":"yes"}"#)), #"400 BAD_REQUEST "admin" is true or false"#)
        let made = try root.request("POST", "/api/users", json: #"{"name":"carol","password":"pw"}"#)
        XCTAssertEqual(made.status, 201)
        XCTAssertEqual(made.header("Location"), "/api/users/carol")
        XCTAssertEqual(refusal(try root.request("POST", "/api/users", json: #"{"name":"carol","password":"pw"}"#)), "409 EXISTS user carol exists")
        XCTAssertEqual(try root.request("PATCH", "/api/users/carol", json: "{}").status, 400)
        XCTAssertEqual(refusal(try root.request("PATCH", "/api/users/nobody", json: #"{"admin":true}"#)), "404 NOT_FOUND no user nobody")
        XCTAssertEqual(refusal(try root.request("DELETE", "/api/users/nobody")), "404 NOT_FOUND no user nobody")
        // carol logs in, then loses her password: the session she had ends (a 401 on its next request).
        let carol = try client("carol", "pw")
        XCTAssertEqual(try carol.request("GET", "/api/me").status, 200)
        XCTAssertEqual(try root.request("PATCH", "/api/users/carol", json: #"{"password":"new"}"#).status, 204)
        XCTAssertEqual(try HTTPTestClient(port: server.httpPort).request("GET", "/api/me", headers: ["Authorization": "Bearer \(carol.token!)"]).status, 401)
        XCTAssertEqual(try client("carol", "new").request("GET", "/api/me").json["user"] as? String, "carol")
        // Her own password: a wrong current one is a 403 (her session is fine), the right one a 204.
        let again = try client("carol", "new")
        XCTAssertEqual(refusal(try again.request("POST", "/api/password", json: #"{"old":"guess","new":"newer"}"#)), "403 AUTH_FAILED the current password is wrong")
        XCTAssertEqual(try again.request("POST", "/api/password", json: #"{"old":"new","new":"newer"}"#).status, 204)
        XCTAssertEqual(try again.request("GET", "/api/me").status, 200, "the session it was changed from goes on")
        let users = try root.request("GET", "/api/users").json["users"] as? [[String: Any]]
        XCTAssertEqual(users?.compactMap { $0["name"] as? String }, ["alice", "bob", "carol", "root"])
    }

    func testAnInvitationsSecretRedeemsItselfOnceAndNothingElse() throws {
        let alice = try client("alice", "pw")
        XCTAssertEqual(try alice.request("POST", "/api/collections", json: #"{"name":"team"}"#).status, 201)
        for (body, message) in [(#"{"role":"owner"}"#, "role must be read, write or admin"),
                                (#"{"role":"read","expires_days":0}"#, "an invitation lasts from 60 s to 31536000 s (a year)"),
                                (#"{"role":"read","uses":0}"#, "uses is a whole number from 1 to 10000"),
                                (#"{"role":"read","note":"\#(String(repeating: "n", count: 201))"}"#, "a note is at most 200 bytes, without control characters")] {
            XCTAssertEqual(refusal(try alice.request("POST", "/api/collections/team/invitations", json: body)), "400 BAD_REQUEST \(message)")
        }
        // Only the collection's admins invite: bob (no access, then a reader) is refused.
        let bob = try client("bob", "bobpw")
        XCTAssertEqual(refusal(try bob.request("POST", "/api/collections/team/invitations", json: #"{"role":"read"}"#)), "403 FORBIDDEN bob has no access to team")
        XCTAssertEqual(try alice.request("PUT", "/api/collections/team/members/bob", json: #"{"role":"read"}"#).status, 200)
        XCTAssertEqual(refusal(try bob.request("POST", "/api/collections/team/invitations", json: #"{"role":"admin"}"#)),
                       "403 FORBIDDEN bob has read access to team; this needs admin")
        XCTAssertEqual(try bob.request("GET", "/api/collections/team/invitations").status, 403)

        let made = try alice.request("POST", "/api/collections/team/invitations", json: #"{"role":"write","note":"for carol"}"#)
        XCTAssertEqual(made.status, 201)
        let secret = try XCTUnwrap(made.json["secret"] as? String)
        XCTAssertEqual(made.json["link"] as? String, "http://127.0.0.1/join#s=\(secret)&p=\(server.port)")
        // The secret is no token, before or after it is used.
        let stranger = try HTTPTestClient(port: server.httpPort)
        XCTAssertEqual(refusal(try stranger.request("GET", "/api/collections", headers: ["Authorization": "Bearer \(secret)"])),
                       "401 AUTH_FAILED wrong user name, password or token")
        XCTAssertEqual(refusal(try stranger.request("POST", "/api/invitation", json: #"{"secret":"psi_short"}"#)), "400 BAD_REQUEST an invitation secret is psi_ and 64 hex digits")
        let unknown = "psi_" + String(repeating: "0", count: 64)
        XCTAssertEqual(refusal(try stranger.request("POST", "/api/invitation", json: #"{"secret":"\#(unknown)"}"#)), "401 AUTH_FAILED wrong user name, password or token")
        let peek = try stranger.request("POST", "/api/invitation", json: #"{"secret":"\#(secret)"}"#)
        XCTAssertEqual(peek.json["collection"] as? String, "team")
        XCTAssertEqual(peek.json["makes_accounts"] as? Bool, true)
        let joined = try stranger.request("POST", "/api/join", json: #"{"secret":"\#(secret)","user":"carol","password":"tea","new":true,"keep":false}"#)
        XCTAssertEqual(joined.status, 200, joined.text)
        XCTAssertEqual(joined.json["role"] as? String, "write")
        XCTAssertTrue(joined.header("Set-Cookie")?.hasSuffix("; Path=/; HttpOnly; SameSite=Strict") ?? false, "a session cookie: \(joined.header("Set-Cookie") ?? "")")
        let token = try XCTUnwrap(joined.json["token"] as? String)
        XCTAssertEqual(refusal(try HTTPTestClient(port: server.httpPort).request("POST", "/api/join", json: #"{"secret":"\#(secret)","user":"dave","password":"x","new":true}"#)),
                       "410 EXPIRED this invitation has been used; ask for a new one")
        XCTAssertEqual(try HTTPTestClient(port: server.httpPort).request("GET", "/api/collections", headers: ["Authorization": "Bearer \(secret)"]).status, 401)
        let carol = try HTTPTestClient(port: server.httpPort)
        carol.token = token
        let devices = try carol.request("GET", "/api/tokens").json["devices"] as? [[String: Any]]
        XCTAssertEqual(devices?.map { $0["ends_with_browser"] as? Bool }, [true])
        XCTAssertEqual(try carol.request("GET", "/api/collections/team/records").status, 200)
        // Revoked: the sessions it made end.
        let listed = try alice.request("GET", "/api/collections/team/invitations").json["invitations"] as? [[String: Any]]
        XCTAssertEqual(listed?.count, 0, "a used-up invitation is no longer open")
        let id = try XCTUnwrap(made.json["id"] as? String)
        XCTAssertEqual(try alice.request("DELETE", "/api/collections/team/invitations/\(id)").status, 204)
        XCTAssertTrue(carol.connection.closedByServer(), "the connection of the session the invitation made is closed")
        XCTAssertEqual(try HTTPTestClient(port: server.httpPort).request("GET", "/api/me", headers: ["Authorization": "Bearer \(token)"]).status, 401,
                       "and its token no longer logs in")
    }

    func testAServerWhoseInvitationsMakeNoAccountsLetsInviteesLogInToTheirOwn() throws {
        let strict = try LiveServer.running(users: [("alice", "pw"), ("bob", "bobpw")], configure: HTTPAPITests.httpOn)
        let alice = try HTTPTestClient.login(port: strict.httpPort, "alice", "pw")
        XCTAssertEqual(try alice.request("POST", "/api/collections", json: #"{"name":"team"}"#).status, 201)
        let secret = try XCTUnwrap(try alice.request("POST", "/api/collections/team/invitations", json: #"{"role":"read","uses":3}"#).json["secret"] as? String)
        let guest = try HTTPTestClient(port: strict.httpPort)
        XCTAssertEqual(refusal(try guest.request("POST", "/api/join", json: #"{"secret":"\#(secret)","user":"carol","password":"tea","new":true}"#)),
                       "403 FORBIDDEN this server's invitations do not make accounts (serve --invitations-make-accounts): log in to yours with AS")
        XCTAssertEqual(refusal(try guest.request("POST", "/api/join", json: #"{"secret":"\#(secret)","user":"bob","password":"guess"}"#)),
                       "401 AUTH_FAILED wrong user name, password or token")
        let bob = try guest.request("POST", "/api/join", json: #"{"secret":"\#(secret)","user":"bob","password":"bobpw"}"#)
        XCTAssertEqual(bob.status, 200, bob.text)
        XCTAssertTrue(bob.header("Set-Cookie")?.contains("Max-Age=31536000") ?? false, "kept signed in unless asked otherwise")
        let uses = try alice.request("GET", "/api/collections/team/invitations").json["invitations"] as? [[String: Any]]
        XCTAssertEqual(uses?.first?["uses"] as? Int, 1)
    }
}
