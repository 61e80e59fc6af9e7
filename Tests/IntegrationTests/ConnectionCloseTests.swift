import Foundation
import XCTest

/// Every way a client can leave, on both ports, against a real server process: before its
/// answer (closed, half-closed, reset), after it, during an event stream or a subscription,
/// during a paced login. A client that leaves early once crashed the server 2 s later (a
/// second close-grace timer fired into a freed connection, issue 29); the server must stay up,
/// serving, and end each connection once.
final class ConnectionCloseTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer(extraArguments: ["--http-listen", "127.0.0.1:0"])
        try server.addUser("alice", password: "pw")
        try server.start()
    }

    override func tearDown() {
        server = nil
    }

    /// How a client leaves after sending its request.
    enum Leaving: CaseIterable {
        case halfClose, close, reset
    }

    private func leave(_ client: LineClient, _ how: Leaving) {
        switch how {
        case .halfClose: client.halfClose()
        case .close: break  // the client is released by the caller
        case .reset: client.reset()
        }
    }

    private func httpRequest(_ method: String, _ target: String, token: String? = nil, json: String? = nil) throws -> HTTPTestClient {
        let client = try HTTPTestClient(port: server.httpPort)
        client.token = token
        try client.send(method, target, json: json)
        return client
    }

    func testClientsLeavingAtEveryPointNeitherCrashNorLeakConnections() throws {
        let observer = try server.login("alice", "pw")
        try observer.expect("c CREATE contacts", equals: "c OK CREATE contacts")
        let token = try HTTPTestClient.login(port: server.httpPort, "alice", "pw").token
        var kept: [Any] = []  // half-closed clients read until the server closes them

        for how in Leaving.allCases {
            // HTTP, before the answer: an unknown token, logins right and wrong (the wrong one
            // is paced), a write.
            let requests: [(String, String, String?, String?)] = [
                ("GET", "/api/me", "pst_unknown", nil),
                ("POST", "/api/login", nil, #"{"user":"alice","password":"pw"}"#),
                ("POST", "/api/login", nil, #"{"user":"alice","password":"wrong"}"#),
                ("POST", "/api/collections", token, #"{"name":"c\#(how)"}"#),
                ("GET", "/api/collections/contacts/records", token, nil),
            ]
            for (method, target, bearer, json) in requests {
                let client = try httpRequest(method, target, token: bearer, json: json)
                leave(client.connection, how)
                if how == .halfClose { kept.append(client) }
            }
            // HTTP, during an event stream.
            let stream = try httpRequest("GET", "/api/collections/contacts/events", token: token)
            XCTAssertEqual(try stream.head().status, 200)
            var event = try stream.nextEvent()
            while event?.event == "change" { event = try stream.nextEvent() }
            XCTAssertEqual(event?.event, "ready")
            leave(stream.connection, how)
            if how == .halfClose { kept.append(stream) }
            // Line port, before the answer: a paced wrong password, a login, a write, a replay.
            for lines in [["h HELLO 1", "a AUTH alice wrong"], ["a AUTH alice pw", "p PUT contacts \(how) 0 {}", "s SUB contacts SINCE 0"]] {
                let client = try server.connect()
                for line in lines { try client.send(line) }
                leave(client, how)
                if how == .halfClose { kept.append(client) }
            }
        }
        // After the answer: read it, then leave.
        let answered = try HTTPTestClient(port: server.httpPort)
        XCTAssertEqual(try answered.request("GET", "/api/me").status, 401)
        answered.connection.halfClose()
        XCTAssertTrue(answered.connection.closedByServer(), "a half-closed HTTP client is closed once answered")

        // Each half-closed client gets its answers, then the server closes it.
        for case let client as HTTPTestClient in kept {
            XCTAssertTrue(client.connection.closedByServer(), "the server closes a half-closed HTTP connection")
        }
        for case let client as LineClient in kept {
            XCTAssertTrue(client.closedByServer(), "the server closes a half-closed line connection")
        }
        kept.removeAll()

        // Every connection but the observer's ends; the server stays up and serving past the
        // close grace (2 s), when a leaked grace timer fired.
        let deadline = Date().addingTimeInterval(8)
        var connections = -1
        repeat {
            let stats = observer.ask("x STATS")
            XCTAssertTrue(stats.hasPrefix("x OK STATS "), "the server answers: \(stats)\n\(server.log().suffix(2000))")
            guard stats.hasPrefix("x OK STATS ") else { break }
            let json = try JSONSerialization.jsonObject(with: Data(stats.dropFirst("x OK STATS ".count).utf8)) as? [String: Any]
            connections = json?["connections"] as? Int ?? -1
        } while connections != 1 && Date() < deadline
        XCTAssertEqual(connections, 1, "only the observer is left")
        let graceOver = Date().addingTimeInterval(3)
        while Date() < graceOver {
            let pong = observer.ask("p PING")
            XCTAssertEqual(pong, "p OK PONG", server.log().suffix(2000).description)
            guard pong == "p OK PONG" else { break }
            usleep(100_000)
        }
        XCTAssertFalse(server.log().contains("Fatal error"), server.log())
    }
}
