import XCTest
@testable import SyncProtocol

final class CommandParserTests: XCTestCase {
    private func command(_ text: String) throws -> Command {
        try CommandParser.parse(XCTUnwrap(RequestParser.parse(Array(text.utf8))))
    }

    private func code(_ text: String) -> ErrorCode? {
        do {
            _ = try command(text)
            return nil
        } catch {
            return (error as? ProtocolError)?.code
        }
    }

    func testEveryVerbParses() throws {
        XCTAssertEqual(try command("t HELLO 1 cli"), .hello(version: "1", clientName: "cli"))
        XCTAssertEqual(try command("t AUTH alice secret"), .auth(user: "alice", password: "secret"))
        XCTAssertEqual(try command("t AUTH TOKEN pst_x"), .authToken("pst_x"))
        XCTAssertEqual(try command("t TOKEN NEW laptop"), .tokenNew(label: "laptop"))
        XCTAssertEqual(try command("t TOKEN REVOKE pst_x"), .tokenRevoke("pst_x"))
        XCTAssertEqual(try command("t CREATE contacts"), .create(collection: "contacts"))
        XCTAssertEqual(try command("t COLLECTIONS"), .collections)
        XCTAssertEqual(try command("t GRANT contacts bob write"), .grant(collection: "contacts", user: "bob", role: .write))
        XCTAssertEqual(try command("t GRANT contacts bob none"), .grant(collection: "contacts", user: "bob", role: nil))
        XCTAssertEqual(try command(#"t PUT contacts "Ada L" 0 {"a":1}"#), .put(collection: "contacts", id: "Ada L", baseRev: 0, fieldsJSON: #"{"a":1}"#))
        XCTAssertEqual(try command("t MOVE c x 3 BEFORE y"), .move(collection: "c", id: "x", baseRev: 3, placement: .before("y")))
        XCTAssertEqual(try command("t MOVE c x 3 first"), .move(collection: "c", id: "x", baseRev: 3, placement: .first))
        XCTAssertEqual(try command("t DEL c x 2"), .delete(collection: "c", id: "x", baseRev: 2))
        XCTAssertEqual(try command("t GET c x"), .get(collection: "c", id: "x"))
        XCTAssertEqual(try command("t LIST c"), .list(collection: "c"))
        XCTAssertEqual(try command("t LIST c LIMIT 100"), .listPage(collection: "c", after: nil, limit: 100))
        XCTAssertEqual(try command(#"t LIST c after Zz "desk lamp" limit 2"#), .listPage(collection: "c", after: RecordCursor(position: "Zz", id: "desk lamp"), limit: 2))
        for bad in ["t LIST c LIMIT 0", "t LIST c LIMIT 1001", "t LIST c AFTER a0 LIMIT 5", "t LIST c AFTER a.0 x LIMIT 5", "t LIST c FROM a0 x LIMIT 5"] {
            XCTAssertEqual(code(bad), .badRequest, bad)
        }
        XCTAssertEqual(try command("t MEMBERS c"), .members(collection: "c"))
        XCTAssertEqual(try command("t SUB c SINCE 7"), .subscribe(collection: "c", since: 7))
        XCTAssertEqual(try command("t UNSUB c"), .unsubscribe(collection: "c"))
        XCTAssertEqual(try command("t PING"), .ping)
        XCTAssertEqual(try command("t STATS"), .stats)
        XCTAssertEqual(try command("t QUIT"), .quit)
        XCTAssertEqual(try command("t WHOAMI"), .whoami)
    }

    func testTheLogVerbsTakeTheirOptionsInAnyOrderOnce() throws {
        XCTAssertEqual(try command("t LOG c"), .log(collection: "c", query: LogQuery(since: nil, author: nil, limit: 100)))
        XCTAssertEqual(try command("t LOG c limit 5 device 0123456789ab since 7"),
                       .log(collection: "c", query: LogQuery(since: 7, author: .device("0123456789ab"), limit: 5)))
        XCTAssertEqual(try command("t LOG c BY bob"), .log(collection: "c", query: LogQuery(since: nil, author: .user("bob"), limit: 100)))
        XCTAssertEqual(try command("t LIST c AT 12"), .listAt(collection: "c", seq: 12))
        XCTAssertEqual(try command("t LIST c AT 12 LIMIT 5"), .listPageAt(collection: "c", seq: 12, after: nil, limit: 5))
        XCTAssertEqual(try command("t LIST c at 12 after a0 \"x y\" limit 5"),
                       .listPageAt(collection: "c", seq: 12, after: RecordCursor(position: "a0", id: "x y"), limit: 5))
        for bad in ["t LIST c AT 12 LIMIT 0", "t LIST c AT -1 LIMIT 5", "t LIST c AT 12 AFTER a0 x", "t LIST c AT 12 LIMIT 5 AFTER a0 x"] {
            XCTAssertThrowsError(try command(bad), bad)
        }
        XCTAssertEqual(try command("t REVERT c TO 3 DEVICE password DRY-RUN"), .revert(collection: "c", toSeq: 3, author: .device("password"), dryRun: true))
        XCTAssertEqual(try command("t REVERT c BY bob TO 3"), .revert(collection: "c", toSeq: 3, author: .user("bob"), dryRun: false))
        for bad in ["t LOG c SINCE", "t LOG c SINCE 1 SINCE 2", "t LOG c LIMIT 1001", "t LOG c BY bob DEVICE password", "t LOG c DEVICE laptop",
                    "t LOG c SINCE -1", "t LOG c FROM 3", "t LIST c AT x", "t REVERT c 3", "t REVERT c BY bob", "t REVERT c TO 3 DRY-RUN DRY-RUN"] {
            XCTAssertEqual(code(bad), .badRequest, bad)
        }
        for command in [Command.log(collection: "c", query: LogQuery(since: 4, author: .user("bob"), limit: 9)),
                        .revert(collection: "c", toSeq: 3, author: .device("0123456789ab"), dryRun: true), .listAt(collection: "c", seq: 2),
                        .listPageAt(collection: "c", seq: 2, after: RecordCursor(position: "a0", id: "x y"), limit: 3)] {
            XCTAssertEqual(try self.command("t " + command.requestText), command, "encodes as it parses")
        }
    }

    /// Each table entry parses into a command of its own verb (nothing falls through to
    /// another verb's meaning), and a verb added to the table without a sample here fails.
    func testEveryTableEntryMakesACommandOfItsOwnVerb() throws {
        let samples = [
            "HELLO": "HELLO 1", "AUTH": "AUTH alice pw", "TOKEN": "TOKEN LIST", "CREATE": "CREATE c", "DROP": "DROP c", "RENAME": "RENAME c d",
            "COLLECTIONS": "COLLECTIONS", "MEMBERS": "MEMBERS c", "GRANT": "GRANT c bob read", "PUT": "PUT c x 0 {}", "MOVE": "MOVE c x 1 LAST", "DEL": "DEL c x 1",
            "GET": "GET c x", "LIST": "LIST c", "SUB": "SUB c SINCE 0", "UNSUB": "UNSUB c", "PING": "PING", "STATS": "STATS", "QUIT": "QUIT",
            "WHOAMI": "WHOAMI", "VERSIONS": "VERSIONS c x", "USER": "USER LIST", "PASSWD": "PASSWD old new", "INVITE": "INVITE LIST c",
            "REDEEM": "REDEEM psi_\(String(repeating: "0", count: 64))", "LOG": "LOG c", "REVERT": "REVERT c TO 3",
        ]
        XCTAssertEqual(Set(samples.keys), Set(CommandParser.verbs))
        for (verb, text) in samples {
            let parsed = try command("t " + text)
            XCTAssertEqual(parsed.requestText.split(separator: " ").first.map(String.init), verb, text)
        }
    }

    func testUniformErrors() {
        XCTAssertEqual(code("t FLY"), .unknownCommand)
        XCTAssertEqual(code("t PING extra"), .badRequest)
        XCTAssertEqual(code("t GET c"), .badRequest)
        XCTAssertEqual(code("t GET c x y"), .badRequest)
        XCTAssertEqual(code("t PUT c x 0"), .badRequest)
        XCTAssertEqual(code("t PUT c x 0 [1]"), .badRequest)
        XCTAssertEqual(code("t GET c x {}"), .badRequest)
        XCTAssertEqual(code("t PUT c x -1 {}"), .badRequest)
        XCTAssertEqual(code("t PUT c x one {}"), .badRequest)
        XCTAssertEqual(code("t CREATE .hidden"), .badRequest)
        XCTAssertEqual(code("t CREATE a/b"), .badRequest)
        XCTAssertEqual(code("t GET c .x"), .badRequest)
        XCTAssertEqual(code("t GET c a.sync-conflict-1"), .badRequest)
        XCTAssertEqual(code("t MOVE c x 1 SIDEWAYS"), .badRequest)
        XCTAssertEqual(code("t SUB c FROM 1"), .badRequest)
        XCTAssertEqual(code("t GRANT c bob owner"), .badRequest)
        XCTAssertEqual(code("t TOKEN REVOKE"), .badRequest)
    }

    func testConflictsCompanionTakesOnlyConflictCopyIDsAndOnlyRecordVerbs() throws {
        let copy = "Ada.sync-conflict-20261201-101500-laptop"
        XCTAssertEqual(try command("t GET c~conflicts \(copy)"), .get(collection: "c~conflicts", id: copy))
        XCTAssertEqual(try command("t SUB c~conflicts SINCE 0"), .subscribe(collection: "c~conflicts", since: 0))
        XCTAssertEqual(code("t PUT c~conflicts Ada 0 {}"), .badRequest)
        XCTAssertEqual(code("t PUT c \(copy) 0 {}"), .badRequest)
        XCTAssertEqual(code("t MOVE c~conflicts \(copy) 1 FIRST"), .badRequest)
        XCTAssertEqual(code("t CREATE c~conflicts"), .badRequest)
        XCTAssertEqual(code("t GRANT c~conflicts bob read"), .badRequest)
        XCTAssertEqual(code("t LIST ~conflicts"), .badRequest)
        XCTAssertEqual(code("t LIST c~conflicts~conflicts"), .badRequest)
        XCTAssertEqual(Names.collection(ofConflicts: "c~conflicts"), "c")
        XCTAssertNil(Names.collection(ofConflicts: "c"))
        XCTAssertFalse(Names.isValidConflictCopyID(String(repeating: "x", count: 234) + ".sync-conflict-1"), "250 bytes")
        XCTAssertTrue(Names.isValidConflictCopyID(String(repeating: "x", count: 233) + ".sync-conflict-1"))
    }

    func testNames() {
        XCTAssertTrue(Names.isValidCollection("presidents_2024.v1-x"))
        XCTAssertFalse(Names.isValidCollection(String(repeating: "a", count: 65)))
        XCTAssertTrue(Names.isValidRecordID("Ada Lovelace (née Byron)"))
        XCTAssertFalse(Names.isValidRecordID(".."))
        XCTAssertFalse(Names.isValidRecordID("a\nb"))
        XCTAssertFalse(Names.isValidRecordID(String(repeating: "é", count: 101)))
    }
}

/// Issue 12, item 3: clients encode requests with `Command.requestText`, the parser's inverse.
final class CommandEncodingTests: XCTestCase {
    func testEveryCommandEncodesToTextTheParserReadsBackAsIt() throws {
        let commands: [Command] = [
            .hello(version: "1", clientName: "plistsync-agent"), .hello(version: "1", clientName: nil),
            .auth(user: "alice", password: "pass word \"quoted\""), .authToken("pst_0123"),
            .tokenNew(label: "alice's laptop"), .tokenNew(label: nil), .tokenRevoke("3f2a9c1b7d4e"), .tokenList,
            .create(collection: "contacts"), .drop(collection: "contacts"), .rename(from: "notes", to: "memos"), .collections, .members(collection: "contacts"),
            .grant(collection: "contacts", user: "bob", role: .write), .grant(collection: "contacts", user: "bob", role: nil),
            .put(collection: "contacts", id: "Ada L", baseRev: 0, fieldsJSON: #"{"a":1,"n":"x y"}"#),
            .put(collection: "contacts~conflicts", id: "Ada.sync-conflict-20261201-070000-laptop", baseRev: 2, fieldsJSON: "{}"),
            .move(collection: "c", id: "x", baseRev: 3, placement: .before("y z")), .move(collection: "c", id: "x", baseRev: 3, placement: .after("y")),
            .move(collection: "c", id: "x", baseRev: 3, placement: .first), .move(collection: "c", id: "{odd}", baseRev: 3, placement: .last),
            .delete(collection: "c", id: "é ü", baseRev: 9), .get(collection: "c", id: "x"), .list(collection: "c"),
            .subscribe(collection: "c", since: 42), .unsubscribe(collection: "c"), .ping, .stats, .quit, .whoami, .versions(collection: "c", id: "desk lamp"),
            .listPage(collection: "c", after: nil, limit: 1000), .listPage(collection: "c", after: RecordCursor(position: "a0V", id: "desk lamp"), limit: 7),
            .userAdd(name: "bob", password: "correct horse \"battery\"", isAdmin: false), .userAdd(name: "root2", password: "x", isAdmin: true),
            .userPassword(name: "bob", password: "staple"), .userRemove(name: "bob"), .userAdmin(name: "bob", isAdmin: true),
            .userAdmin(name: "bob", isAdmin: false), .userList, .passwd(old: "old pass", new: "new pass"),
        ]
        for command in commands {
            XCTAssertNoThrow(try CommandParser.validate(command), command.requestText)
        }
        for command in commands {
            let line = try XCTUnwrap(RequestParser.parse(Array(("t " + command.requestText).utf8)))
            XCTAssertEqual(try CommandParser.parse(line), command, command.requestText)
        }
    }
}

/// Issue 45: the account verbs' arguments are checked as `plistsync user` checks them.
final class AccountVerbParsingTests: XCTestCase {
    private func parse(_ text: String) throws -> Command {
        try CommandParser.parse(XCTUnwrap(RequestParser.parse(Array(("t " + text).utf8))))
    }

    private func refusal(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch let error as ProtocolError {
            return "\(error.code.rawValue) \(error.message)"
        } catch {
            return "\(error)"
        }
    }

    func testUserVerbsReadTheirWords() throws {
        XCTAssertEqual(try parse("USER ADD bob pw"), .userAdd(name: "bob", password: "pw", isAdmin: false))
        XCTAssertEqual(try parse("user add bob pw admin"), .userAdd(name: "bob", password: "pw", isAdmin: true))
        XCTAssertEqual(try parse("USER ADMIN bob off"), .userAdmin(name: "bob", isAdmin: false))
        XCTAssertEqual(try parse("PASSWD \"a b\" c"), .passwd(old: "a b", new: "c"))
    }

    func testBadNamesPasswordsAndShapesAreRefused() {
        XCTAssertEqual(refusal("USER ADD Token pw"), "BAD_REQUEST 'Token' is reserved (AUTH TOKEN is the token login); choose another name")
        XCTAssertEqual(refusal("USER ADD .hidden pw"), "BAD_REQUEST invalid user name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        XCTAssertEqual(refusal("USER REMOVE \(String(repeating: "a", count: 65))"), "BAD_REQUEST invalid user name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        XCTAssertEqual(refusal("USER ADD bob \"\""), "BAD_REQUEST a password is 1 to 1024 bytes")
        XCTAssertEqual(refusal("USER ADD bob \(String(repeating: "x", count: 1025))"), "BAD_REQUEST a password is 1 to 1024 bytes")
        XCTAssertEqual(refusal("PASSWD old \"\""), "BAD_REQUEST a password is 1 to 1024 bytes")
        XCTAssertEqual(refusal("USER ADD bob pw root")?.hasPrefix("BAD_REQUEST usage: USER ADD"), true)
        XCTAssertEqual(refusal("USER ADMIN bob maybe")?.hasPrefix("BAD_REQUEST usage: USER ADD"), true)
        XCTAssertEqual(refusal("USER DELETE bob")?.hasPrefix("BAD_REQUEST usage: USER ADD"), true)
    }
}
