import Foundation
import PlistSyncTesting
import SyncCore
import XCTest

/// The HTTP/JSON API on a server in memory (Protocol/HTTP.md): the same requests as over a
/// socket, through the same HTTP connection and session code, with the bytes carried in
/// memory and the store a `MemoryStore`: logins and cookies, the ETag/If-Match rules,
/// listings and pages, event streams, pipelining, members, devices, conflicts. What needs a
/// real listener or process (limits on the wire, deadlines, TLS, shutdown) is HTTPAPITests.
final class HTTPAPIMemoryTests: XCTestCase {
    var memory: InMemoryServer!

    override func setUpWithError() throws {
        memory = try InMemoryServer(users: [(name: "alice", password: "pw", admin: false), (name: "bob", password: "bobpw", admin: false)])
    }

    override func tearDown() {
        memory = nil
    }

    func http() -> MemoryHTTPClient { memory.httpConnect() }
    func alice() throws -> MemoryHTTPClient { try http().loggedIn("alice", "pw") }

    /// alice logged in, with collection `c` created.
    func aliceWithCollection(_ name: String = "inventory") throws -> MemoryHTTPClient {
        let client = try alice()
        XCTAssertEqual(try client.request("POST", "/api/collections", json: #"{"name":"\#(name)"}"#).status, 201)
        return client
    }

    func testLoginSetsAStrictHttpOnlyCookieAndTheTokenWorksAsBearerOrCookie() throws {
        let client = http()
        let login = try client.request("POST", "/api/login", json: #"{"user":"alice","password":"pw"}"#)
        XCTAssertEqual(login.status, 200)
        let token = try XCTUnwrap(login.json["token"] as? String)
        XCTAssertEqual(login.json["user"] as? String, "alice")
        let cookie = try XCTUnwrap(login.header("Set-Cookie"))
        XCTAssertTrue(cookie.hasPrefix("plistsync_token=\(token);"), cookie)
        for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] { XCTAssertTrue(cookie.contains(flag), cookie) }
        XCTAssertFalse(cookie.contains("Secure"), "plaintext HTTP: no Secure flag")

        let byBearer = http()
        byBearer.token = token
        XCTAssertEqual(try byBearer.request("GET", "/api/me").json["user"] as? String, "alice")
        let byCookie = http()
        byCookie.cookie = token
        XCTAssertEqual(try byCookie.request("GET", "/api/me").json["user"] as? String, "alice")

        let wrong = try http().request("POST", "/api/login", json: #"{"user":"alice","password":"nope"}"#)
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(wrong.json["error"] as? String, "AUTH_FAILED")
        let anonymous = try http().request("GET", "/api/collections")
        XCTAssertEqual(anonymous.status, 401)
        XCTAssertEqual(anonymous.json["error"] as? String, "AUTH_REQUIRED")
    }

    func testACookieMutationWithoutTheCSRFHeaderIsRefusedAndChangesNothing() throws {
        let owner = try aliceWithCollection()
        let browser = http()
        browser.cookie = owner.token
        let forged = try browser.request("PUT", "/api/collections/inventory/records/lamp", headers: ["If-None-Match": "*"], json: #"{"name":"Lamp"}"#)
        XCTAssertEqual(forged.status, 403)
        XCTAssertEqual(forged.json["error"] as? String, "CSRF")
        XCTAssertEqual(try owner.request("GET", "/api/collections/inventory/records/lamp").status, 404)
        let real = try browser.request("PUT", "/api/collections/inventory/records/lamp", headers: ["If-None-Match": "*", "X-PlistSync-CSRF": "1"], json: #"{"name":"Lamp"}"#)
        XCTAssertEqual(real.status, 201, real.text)
        XCTAssertEqual(try browser.request("GET", "/api/collections/inventory/records/lamp").status, 200, "reads need no header")
        let form = try browser.request("POST", "/api/collections", headers: ["X-PlistSync-CSRF": "1"], body: "name=evil")
        XCTAssertEqual(form.status, 415, "a body that is not JSON (a form post) is refused")
    }

    func testRevisionsAreETagsAndStaleWritesAre409WithTheServersRecord() throws {
        let client = try aliceWithCollection()
        let path = "/api/collections/inventory/records/laptop"
        let fields = #"{"created":{"$date":"2024-05-01T09:30:00Z"},"name":"Laptop","price":1.0,"value":1200}"#
        let created = try client.request("PUT", path, headers: ["If-None-Match": "*"], json: fields)
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertEqual(created.header("ETag"), "\"1\"")
        let again = try client.request("PUT", path, headers: ["If-None-Match": "*"], json: #"{"name":"Other"}"#)
        XCTAssertEqual(again.status, 409)
        XCTAssertEqual(try client.request("PUT", path, json: #"{"name":"x"}"#).status, 428, "a write names its base rev")

        let read = try client.request("GET", path)
        XCTAssertEqual(read.status, 200)
        XCTAssertEqual(read.header("ETag"), "\"1\"")
        XCTAssertEqual(read.text, #"{"fields":\#(fields),"id":"laptop","position":"a0","rev":1}"# + "\n", "integers, reals and dates keep their types")
        XCTAssertEqual(try client.request("GET", path, headers: ["If-None-Match": "\"1\""]).status, 304)

        let updated = try client.request("PUT", path, headers: ["If-Match": "\"1\""], json: #"{"name":"Laptop","value":1100}"#)
        XCTAssertEqual(updated.status, 200)
        XCTAssertEqual(updated.header("ETag"), "\"2\"")
        let stale = try client.request("PUT", path, headers: ["If-Match": "\"1\""], json: #"{"value":0}"#)
        XCTAssertEqual(stale.status, 409)
        XCTAssertEqual(stale.json["error"] as? String, "CONFLICT")
        let current = try XCTUnwrap(stale.json["current"] as? [String: Any])
        XCTAssertEqual(current["rev"] as? Int, 2)
        XCTAssertEqual((current["fields"] as? [String: Any])?["value"] as? Int, 1100)

        XCTAssertEqual(try client.request("DELETE", path).status, 428)
        XCTAssertEqual(try client.request("DELETE", path, headers: ["If-Match": "\"1\""]).status, 409)
        let deleted = try client.request("DELETE", path, headers: ["If-Match": "\"2\""])
        XCTAssertEqual(deleted.status, 200)
        XCTAssertEqual(deleted.json["rev"] as? Int, 3)
        let gone = try client.request("GET", path)
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.json["deleted"] as? Bool, true)
        let revived = try client.request("PUT", path, headers: ["If-Match": "\"3\""], json: #"{"name":"Back"}"#)
        XCTAssertEqual(revived.status, 200, "an edit beats a delete, as on the line protocol")

        let badJSON = try client.request("PUT", "/api/collections/inventory/records/x", headers: ["If-None-Match": "*"], json: #"{"a":null}"#)
        XCTAssertEqual(badJSON.status, 400)
        XCTAssertEqual(badJSON.json["error"] as? String, "BAD_REQUEST")
    }

    func testWritesCrossBetweenHTTPAndTheLineProtocol() throws {
        let client = try aliceWithCollection("contacts")
        let subscriber = try memory.login("alice", "pw")
        try subscriber.expect("s SUB contacts SINCE 0", equals: "s OK SUB contacts 0")
        XCTAssertEqual(try client.request("PUT", "/api/collections/contacts/records/desk%20lamp", headers: ["If-None-Match": "*"], json: #"{"name":"Desk lamp"}"#).status, 201)
        XCTAssertEqual(try subscriber.line(), #"* CHANGE contacts 1 "desk lamp" 1 a0 {"name":"Desk lamp"}"#)
        try subscriber.expect(#"p PUT contacts Ada 0 {"phone":"555-0111"}"#, equals: "p OK PUT contacts Ada 1 2")
        let listed = try client.request("GET", "/api/collections/contacts/records")
        XCTAssertEqual(listed.status, 200)
        XCTAssertEqual(listed.header("Transfer-Encoding"), "chunked")
        XCTAssertEqual((listed.json["records"] as? [[String: Any]])?.map { $0["id"] as? String }, ["desk lamp", "Ada"])
        XCTAssertEqual(listed.json["seq"] as? Int, 2)
    }

    func testMovesAndPagedListingsKeepTheOrder() throws {
        let client = try aliceWithCollection()
        for id in ["a", "b", "c", "d", "e"] {
            XCTAssertEqual(try client.request("PUT", "/api/collections/inventory/records/\(id)", headers: ["If-None-Match": "*"], json: #"{"n":1}"#).status, 201)
        }
        let moved = try client.request("POST", "/api/collections/inventory/records/e/move", headers: ["If-Match": "\"1\""], json: #"{"to":"first"}"#)
        XCTAssertEqual(moved.status, 200, moved.text)
        XCTAssertEqual(try client.request("POST", "/api/collections/inventory/records/a/move", headers: ["If-Match": "\"1\""], json: #"{"to":"after","anchor":"c"}"#).status, 200)
        XCTAssertEqual(try client.request("POST", "/api/collections/inventory/records/b/move", headers: ["If-Match": "\"1\""], json: #"{"to":"before","anchor":"zz"}"#).status, 404)
        XCTAssertEqual(try client.request("POST", "/api/collections/inventory/records/b/move", headers: ["If-Match": "\"1\""], json: #"{"to":"sideways"}"#).status, 400)
        let all = try client.request("GET", "/api/collections/inventory/records")
        XCTAssertEqual((all.json["records"] as? [[String: Any]])?.map { $0["id"] as? String }, ["e", "b", "c", "a", "d"])
        XCTAssertEqual(all.json["count"] as? Int, 5)
        let page = try client.request("GET", "/api/collections/inventory/records?offset=1&limit=2")
        XCTAssertEqual((page.json["records"] as? [[String: Any]])?.map { $0["id"] as? String }, ["b", "c"])
        XCTAssertEqual(try client.request("GET", "/api/collections/inventory/records?limit=-1").status, 400)

        // Keyset pages: each names the next, the last names none; together they are the list.
        var ids: [String] = []
        var target = "/api/collections/inventory/records?limit=2"
        var pages = 0
        while true {
            let response = try client.request("GET", target)
            XCTAssertEqual(response.status, 200, response.text)
            ids += (response.json["records"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            pages += 1
            guard let next = response.json["next"] as? String else { break }
            target = "/api/collections/inventory/records?limit=2&after=" + MemoryHTTPClient.queryEncoded(next)
        }
        XCTAssertEqual(ids, ["e", "b", "c", "a", "d"])
        XCTAssertEqual(pages, 3)
        let rest = try client.request("GET", "/api/collections/inventory/records?after=" + MemoryHTTPClient.queryEncoded("a1.c"))
        XCTAssertNotNil(rest.json["seq"])
        XCTAssertEqual(try client.request("GET", "/api/collections/inventory/records?after=nodot").status, 400)
        XCTAssertEqual(try client.request("GET", "/api/collections/nothing/records?limit=5").status, 404)
    }

    func testTheEventStreamReplaysGoesLiveAndResumesByLastEventID() throws {
        let client = try aliceWithCollection("contacts")
        for id in ["Ada", "Grace"] {
            XCTAssertEqual(try client.request("PUT", "/api/collections/contacts/records/\(id)", headers: ["If-None-Match": "*"], json: #"{"name":"\#(id)"}"#).status, 201)
        }
        let stream = http()
        stream.token = client.token
        try stream.send("GET", "/api/collections/contacts/events")
        let head = try stream.head()
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.headers.first { $0.name == "Content-Type" }?.value, "text/event-stream")
        XCTAssertEqual(try stream.nextEvent(), ServerSentEvent(event: "change", id: "1", data: #"{"fields":{"name":"Ada"},"id":"Ada","position":"a0","rev":1,"seq":1}"#))
        XCTAssertEqual(try stream.nextEvent()?.id, "2")
        XCTAssertEqual(try stream.nextEvent(), ServerSentEvent(event: "ready", id: "2", data: #"{"seq":2}"#))
        XCTAssertEqual(try client.request("DELETE", "/api/collections/contacts/records/Ada", headers: ["If-Match": "\"1\""]).status, 200)
        XCTAssertEqual(try stream.nextEvent(), ServerSentEvent(event: "change", id: "3", data: #"{"deleted":true,"id":"Ada","rev":2,"seq":3}"#))

        // A browser reconnecting sends the last id it saw: only later changes come.
        XCTAssertEqual(try client.request("PUT", "/api/collections/contacts/records/Grace", headers: ["If-Match": "\"1\""], json: #"{"name":"Grace H"}"#).status, 200)
        let resumed = http()
        resumed.token = client.token
        try resumed.send("GET", "/api/collections/contacts/events", headers: ["Last-Event-ID": "3"])
        XCTAssertEqual(try resumed.head().status, 200)
        XCTAssertEqual(try resumed.nextEvent()?.data, #"{"fields":{"name":"Grace H"},"id":"Grace","position":"a1","rev":2,"seq":4}"#)
        XCTAssertEqual(try resumed.nextEvent()?.event, "ready")

        let forbidden = try http().loggedIn("bob", "bobpw")
        XCTAssertEqual(try forbidden.request("GET", "/api/collections/contacts/events").status, 403)
        XCTAssertEqual(try client.request("GET", "/api/collections/nothing/events").status, 404)
    }

    func testAStreamEndsWithRevokedWhenReadAccessIsTakenAway() throws {
        let owner = try aliceWithCollection("shared")
        XCTAssertEqual(try owner.request("PUT", "/api/collections/shared/members/bob", json: #"{"role":"read"}"#).status, 200)
        let bob = try http().loggedIn("bob", "bobpw")
        try bob.send("GET", "/api/collections/shared/events")
        XCTAssertEqual(try bob.head().status, 200)
        XCTAssertEqual(try bob.nextEvent()?.event, "ready")
        XCTAssertEqual(try owner.request("DELETE", "/api/collections/shared/members/bob").status, 200)
        XCTAssertEqual(try bob.nextEvent()?.event, "revoked")
        XCTAssertNil(try bob.nextEvent(), "the stream ends")
        XCTAssertEqual(try bob.request("GET", "/api/collections/shared/records").status, 403, "the connection goes on serving")
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let client = try aliceWithCollection()
        var bytes: [UInt8] = []
        for id in ["one", "two", "three"] {
            bytes += client.requestBytes("PUT", "/api/collections/inventory/records/\(id)", headers: ["If-None-Match": "*"], json: #"{"n":1}"#)
        }
        bytes += client.requestBytes("GET", "/api/collections/inventory/records/two")
        try client.connection.send(bytes: bytes)
        XCTAssertEqual(try (0..<3).map { _ in try client.response().json["id"] as? String }, ["one", "two", "three"])
        let two = try client.response()
        XCTAssertEqual(two.json["id"] as? String, "two")
        XCTAssertEqual(two.json["position"] as? String, "a1")

        // More than a connection holds waiting (16): reading pauses and resumes, none is lost.
        let ids = ["one", "two", "three"]
        try client.connection.send(bytes: (0..<60).flatMap { client.requestBytes("GET", "/api/collections/inventory/records/\(ids[$0 % 3])") })
        XCTAssertEqual(try (0..<60).map { _ in try client.response().json["id"] as? String }, (0..<60).map { ids[$0 % 3] })
    }

    /// HEAD wherever GET works (the same status and headers, no body); absolute-form targets;
    /// credentials far longer than any real one are a plain 401, not `503 BUSY` (they went into
    /// a login line past the pre-auth line limit, which closed the session).
    func testHeadAbsoluteTargetsAndOverlongCredentials() throws {
        let client = try aliceWithCollection()
        XCTAssertEqual(try client.request("PUT", "/api/collections/inventory/records/lamp", headers: ["If-None-Match": "*"], json: #"{"n":1}"#).status, 201)
        for target in ["/api/me", "/api/collections", "/api/collections/inventory/records", "/api/collections/inventory/records/lamp", "/api/status"] {
            let head = try client.request("HEAD", target)
            XCTAssertEqual(head.status, 200, target)
            XCTAssertTrue(head.body.isEmpty, target)
        }
        let missing = try client.request("HEAD", "/api/collections/inventory/records/nothing")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(try client.request("GET", "/api/collections/inventory/records/lamp").json["id"] as? String, "lamp", "the connection goes on after HEADs")
        let streamHead = try client.request("HEAD", "/api/collections/inventory/events")
        XCTAssertEqual(streamHead.status, 200)
        XCTAssertEqual(streamHead.header("Content-Type"), "text/event-stream")

        let absolute = try client.request("GET", "http://127.0.0.1:\(0)/api/me")
        XCTAssertEqual(absolute.status, 200, absolute.text)
        XCTAssertEqual(absolute.json["user"] as? String, "alice")

        let longToken = http()
        longToken.token = "pst_" + String(repeating: "x", count: 15_000)
        let refusedToken = try longToken.request("GET", "/api/me")
        XCTAssertEqual(refusedToken.status, 401, refusedToken.text)
        XCTAssertEqual(refusedToken.json["error"] as? String, "AUTH_FAILED")
        let longCookie = http()
        longCookie.cookie = String(repeating: "c", count: 8_000)
        XCTAssertEqual(try longCookie.request("GET", "/api/collections").status, 401)
        let longPassword = http()
        let refusedPassword = try longPassword.request("POST", "/api/login", json: #"{"user":"alice","password":"\#(String(repeating: "p", count: 8_000))"}"#)
        XCTAssertEqual(refusedPassword.status, 401, refusedPassword.text)
        XCTAssertEqual(refusedPassword.json["error"] as? String, "AUTH_FAILED")
    }

    func testMembersDevicesStatusAndLogout() throws {
        let owner = try aliceWithCollection("shared")
        XCTAssertEqual(try owner.request("PUT", "/api/collections/shared/members/bob", json: #"{"role":"writer"}"#).status, 400)
        XCTAssertEqual(try owner.request("PUT", "/api/collections/shared/members/bob", json: #"{"role":"write"}"#).status, 200)
        let members = try owner.request("GET", "/api/collections/shared/members").json["members"] as? [[String: String]]
        XCTAssertEqual(members ?? [], [["role": "admin", "user": "alice"], ["role": "write", "user": "bob"]])
        let bob = try http().loggedIn("bob", "bobpw")
        XCTAssertEqual(try bob.request("PUT", "/api/collections/shared/members/carol", json: #"{"role":"read"}"#).status, 403, "only an admin grants")

        // A device (a line-protocol connection with its own token) revoked from the API is cut off.
        let device = try memory.login("alice", "pw")
        let tokenLine = try device.expect("t TOKEN NEW phone", prefix: "t OK TOKEN ")
        let deviceToken = String(tokenLine.dropFirst("t OK TOKEN ".count))
        let phone = memory.connect()
        try phone.expect("a AUTH TOKEN \(deviceToken)", equals: "a OK AUTH alice")
        let devices = try XCTUnwrap(owner.request("GET", "/api/tokens").json["devices"] as? [[String: Any]])
        let phoneEntry = try XCTUnwrap(devices.first { $0["label"] as? String == "phone" })
        XCTAssertEqual(devices.filter { $0["this"] as? Bool == true }.count, 1, "the browser's own token is marked")
        XCTAssertEqual(try owner.request("DELETE", "/api/tokens/\(phoneEntry["id"] as! String)").status, 204)
        XCTAssertEqual(try phone.readLine(), "* BYE REVOKED")

        let status = try owner.request("GET", "/api/status").json
        for key in ["connections", "subscribers", "store_bytes", "uptime_seconds", "seq"] { XCTAssertNotNil(status[key], key) }
        XCTAssertGreaterThanOrEqual(status["connections"] as? Int ?? 0, 3)

        let token = try XCTUnwrap(owner.token)
        let logout = try owner.request("POST", "/api/logout")
        XCTAssertEqual(logout.status, 204)
        XCTAssertTrue(logout.header("Set-Cookie")?.contains("Max-Age=0") ?? false)
        let after = http()
        after.token = token
        XCTAssertEqual(try after.request("GET", "/api/me").status, 401, "logout revokes the token")
    }

    /// Issue 43 item 4: the logout's 204 said nothing of the close that followed, so a request
    /// sent next on the keep-alive connection got no answer at all (h11: dropped mid-exchange).
    func testLogoutSaysItClosesTheConnectionAndAnswersNothingAfter() throws {
        let client = try alice()
        XCTAssertEqual(try client.request("GET", "/api/me").status, 200)
        let logout = try client.request("POST", "/api/logout")
        XCTAssertEqual(logout.status, 204)
        XCTAssertEqual(logout.header("Connection")?.lowercased(), "close")
        XCTAssertTrue(client.connection.closedByServer(within: 5), "the connection closes after the 204")
    }

    /// Issue 43 item 5: a 201 names what it made (httplint flags a 201 without Location), and
    /// (httplint's other warning) every response has a Date.
    func testCreatedAnswersCarryTheLocationOfWhatWasMade() throws {
        let client = try alice()
        let collection = try client.request("POST", "/api/collections", json: #"{"name":"inventory"}"#)
        XCTAssertEqual(collection.status, 201)
        // And every answer says when it was made (RFC 9110 §6.6.1; httplint warned on each).
        let date = try XCTUnwrap(collection.header("Date"))
        XCTAssertNotNil(date.range(of: #"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$"#, options: .regularExpression), date)
        XCTAssertEqual(collection.header("Location"), "/api/collections/inventory")
        let record = try client.request("PUT", "/api/collections/inventory/records/desk%20lamp%20%C3%A9", headers: ["If-None-Match": "*"], json: #"{"name":"Desk lamp"}"#)
        XCTAssertEqual(record.status, 201, record.text)
        XCTAssertEqual(record.header("Location"), "/api/collections/inventory/records/desk%20lamp%20%C3%A9")
        XCTAssertEqual(try client.request("GET", try XCTUnwrap(record.header("Location"))).json["id"] as? String, "desk lamp é")
        let update = try client.request("PUT", "/api/collections/inventory/records/desk%20lamp%20%C3%A9", headers: ["If-Match": "\"1\""], json: #"{"name":"Lamp"}"#)
        XCTAssertEqual(update.status, 200)
        XCTAssertNil(update.header("Location"), "an update makes nothing new")
    }

    /// Issue 44 item 5: `limit=0` answered an empty page with `next: null`, telling a pager the
    /// list had ended; creating an id that exists said the request's If-Match was stale.
    func testAPageOfNoneIsRefusedAndACreateOfAnExistingIdSaysItExists() throws {
        let client = try aliceWithCollection()
        XCTAssertEqual(try client.request("PUT", "/api/collections/inventory/records/lamp", headers: ["If-None-Match": "*"], json: #"{"name":"Lamp"}"#).status, 201)
        let none = try client.request("GET", "/api/collections/inventory/records?limit=0")
        XCTAssertEqual(none.status, 400, none.text)
        XCTAssertEqual(none.json["error"] as? String, "BAD_REQUEST")
        let again = try client.request("PUT", "/api/collections/inventory/records/lamp", headers: ["If-None-Match": "*"], json: #"{"name":"Other"}"#)
        XCTAssertEqual(again.status, 409)
        XCTAssertEqual(again.json["message"] as? String, #"a record "lamp" already exists in inventory (rev 1): pick another id, or edit that one"#)
        let stale = try client.request("PUT", "/api/collections/inventory/records/lamp", headers: ["If-Match": "\"7\""], json: #"{"name":"Other"}"#)
        XCTAssertEqual(stale.json["message"] as? String, "the record is at rev 1; the request's If-Match is stale")
    }

    func testConflictCopiesAreResolvedByKeepingTheCopyOrTheRecord() throws {
        let client = try aliceWithCollection("contacts")
        let line = try memory.login("alice", "pw")
        try line.expect(#"p PUT contacts Ada 0 {"phone":"555-0199"}"#, equals: "p OK PUT contacts Ada 1 1")
        try line.expect(#"c PUT contacts~conflicts Ada.sync-conflict-20261201-101500-laptop 0 {"phone":"555-0111"}"#, prefix: "c OK PUT")
        try line.expect(#"d PUT contacts~conflicts Ada.sync-conflict-20261201-101600-phone 0 {"phone":"555-0222"}"#, prefix: "d OK PUT")
        let listed = try XCTUnwrap(client.request("GET", "/api/collections/contacts/conflicts").json["conflicts"] as? [[String: Any]])
        XCTAssertEqual(listed.map { $0["of"] as? String }, ["Ada", "Ada"])

        let keepCopy = try client.request("POST", "/api/collections/contacts/conflicts/Ada.sync-conflict-20261201-101500-laptop/resolve", json: #"{"keep":"copy"}"#)
        XCTAssertEqual(keepCopy.status, 200, keepCopy.text)
        try line.expect("g GET contacts Ada", equals: #"g OK GET contacts Ada 2 a0 {"phone":"555-0111"}"#)
        let keepCurrent = try client.request("POST", "/api/collections/contacts/conflicts/Ada.sync-conflict-20261201-101600-phone/resolve", json: #"{"keep":"current"}"#)
        XCTAssertEqual(keepCurrent.status, 200)
        try line.expect("h GET contacts Ada", equals: #"h OK GET contacts Ada 2 a0 {"phone":"555-0111"}"#)
        XCTAssertEqual((try client.request("GET", "/api/collections/contacts/conflicts").json["conflicts"] as? [Any])?.count, 0)
    }

    func testTheConsoleIsServedWithAStrictContentSecurityPolicy() throws {
        let client = http()
        let page = try client.request("GET", "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        let policy = try XCTUnwrap(page.header("Content-Security-Policy"))
        XCTAssertTrue(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"), policy)
        XCTAssertFalse(policy.contains("unsafe-inline"))
        XCTAssertNil(page.text.range(of: #"<script(?![^>]*\bsrc=)[^>]*>"#, options: .regularExpression), "no inline script")
        for file in ["app.js", "api.js", "values.js", "records.js", "views.js", "dom.js"] {
            let script = try client.request("GET", "/\(file)")
            XCTAssertEqual(script.status, 200, file)
            XCTAssertEqual(script.header("Content-Type"), "text/javascript; charset=utf-8")
        }
        XCTAssertEqual(try client.request("GET", "/style.css").status, 200)
        XCTAssertEqual(try client.request("GET", "/../etc/passwd").status, 404)
        XCTAssertEqual(try client.request("HEAD", "/").status, 200)
        // A validator, so a browser's revalidation is a 304 (httplint: "no validator").
        let tag = try XCTUnwrap(page.header("ETag"))
        XCTAssertEqual(page.header("Cache-Control"), "no-cache")
        let again = try client.request("GET", "/", headers: ["If-None-Match": "\"other\", \(tag)"])
        XCTAssertEqual(again.status, 304)
        XCTAssertEqual(again.header("ETag"), tag)
        XCTAssertTrue(again.text.isEmpty)
        XCTAssertEqual(try client.request("GET", "/", headers: ["If-None-Match": "\"other\""]).status, 200)
        XCTAssertNotEqual(try client.request("GET", "/app.js").header("ETag"), tag, "each file has its own tag")
    }
}
