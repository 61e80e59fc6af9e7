import Foundation
import TLSKit
import XCTest

/// Issue 11, items 1–3: TLS on the wire against a real listener: the protocol over TLS,
/// fingerprint pinning, CAs, self-signed and expired certificates, plaintext on a TLS port and
/// TLS on a plaintext one, trust on first use at login, agents syncing over TLS, and a
/// transcript replayed through `openssl s_client`.
final class TLSTests: XCTestCase {
    private var server: TestServer!
    private var scratch: String!

    override func setUpWithError() throws {
        server = try TestServer.running(["--tls"])
        scratch = NSTemporaryDirectory() + "plistsync-tls-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        try "pw\n".write(toFile: scratch + "/password", atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        server = nil
        try? FileManager.default.removeItem(atPath: scratch)
    }

    private var certificate: String { server.dataPath + "/tls/cert.pem" }

    /// The fingerprint the server printed when it started.
    private func printedFingerprint() throws -> String {
        let log = server.log()
        let line = try XCTUnwrap(log.split(separator: "\n").first { $0.contains("fingerprint") })
        return String(try XCTUnwrap(line.split(separator: " ").last))
    }

    private func client(_ extra: [String], home: String? = nil) throws -> (Int32, String, String) {
        try PlistSyncBinary.run(["ls", "--server", "127.0.0.1:\(server.port)", "--user", "alice"] + extra,
                                environment: ["HOME": home ?? scratch])
    }

    func testCommandsWorkOverTLSWithAPinnedFingerprintOrTheCertificateAsCA() throws {
        let fingerprint = try printedFingerprint()
        XCTAssertEqual(fingerprint.count, 95, "32 bytes as AB:CD:…")
        let attributes = try FileManager.default.attributesOfItem(atPath: server.dataPath + "/tls/key.pem")
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let pinned = try client(["--password-file", scratch + "/password", "--fingerprint", fingerprint])
        XCTAssertEqual(pinned.0, 0, pinned.2)
        let authority = try client(["--password-file", scratch + "/password", "--ca", certificate])
        XCTAssertEqual(authority.0, 0, authority.2)
    }

    func testAWrongFingerprintOrAnUntrustedSelfSignedCertificateIsRefusedWithTheReason() throws {
        let wrong = try client(["--password-file", scratch + "/password", "--fingerprint", String(repeating: "ab", count: 32)])
        XCTAssertNotEqual(wrong.0, 0)
        XCTAssertTrue(wrong.2.contains("is not the expected one"), wrong.2)
        let systemCAs = try client(["--password-file", scratch + "/password", "--tls"])
        XCTAssertNotEqual(systemCAs.0, 0)
        XCTAssertTrue(systemCAs.2.contains("self-signed") && systemCAs.2.contains("--fingerprint"), systemCAs.2)
        XCTAssertTrue(server.log().contains("serving on"), "the server is still up")
    }

    func testAnExpiredCertificateIsRefusedEvenWithItsCA() throws {
        // A certificate whose validity ended ten days ago, made by the server's own code.
        try SelfSigned.make(certificate: scratch + "/old.pem", key: scratch + "/old.key", name: "localhost", days: 10, startingInDays: -20)
        let expired = try TestServer.running(["--tls-cert", scratch + "/old.pem", "--tls-key", scratch + "/old.key"])
        let (code, _, error) = try PlistSyncBinary.run(
            ["ls", "--server", "127.0.0.1:\(expired.port)", "--user", "alice", "--password-file", scratch + "/password", "--ca", scratch + "/old.pem"])
        XCTAssertNotEqual(code, 0)
        XCTAssertTrue(error.contains("expired"), error)
    }

    func testPlaintextToTheTLSPortGetsAReadableRefusalAndTLSToAPlaintextPortAClearError() throws {
        let raw = try server.connect()
        try raw.send("h HELLO 1")
        XCTAssertEqual(try raw.readLine(), "* BYE TLS_REQUIRED this port speaks TLS: connect with --tls")
        let plaintext = try TestServer.running()
        let (code, _, error) = try PlistSyncBinary.run(
            ["ls", "--server", "127.0.0.1:\(plaintext.port)", "--user", "alice", "--password-file", scratch + "/password",
             "--fingerprint", try printedFingerprint()])
        XCTAssertNotEqual(code, 0)
        XCTAssertTrue(error.contains("did not answer in TLS"), error)
    }

    func testAPasswordIsNotSentInPlaintextOverANetwork() throws {
        let (code, _, error) = try PlistSyncBinary.run(["ls", "--server", "192.0.2.1:7420", "--user", "alice", "--password-file", scratch + "/password"])
        XCTAssertEqual(code, 64, error)
        XCTAssertTrue(error.contains("refusing to send a password in plaintext"), error)
    }

    func testLoginTrustsTheFirstCertificateAndLaterCommandsRefuseAnother() throws {
        let login = try PlistSyncBinary.run(["login", "--server", "127.0.0.1:\(server.port)", "--user", "alice", "--tls", "--password-stdin"],
                                            input: "pw\n", environment: ["HOME": scratch])
        XCTAssertEqual(login.0, 0, login.2)
        XCTAssertTrue(login.2.contains(try printedFingerprint()), "the fingerprint is shown: \(login.2)")
        let listed = try client([])
        XCTAssertEqual(listed.0, 0, "the stored token and pin need no flags: \(listed.2)")
        // The server gets a new certificate: the pin no longer matches.
        server.stop()
        try FileManager.default.removeItem(atPath: server.dataPath + "/tls")
        try server.start()
        let refused = try client([])
        XCTAssertNotEqual(refused.0, 0)
        XCTAssertTrue(refused.2.contains("is not the expected one"), refused.2)
        let again = try PlistSyncBinary.run(["login", "--server", "127.0.0.1:\(server.port)", "--user", "alice", "--tls", "--password-stdin"],
                                            input: "pw\n", environment: ["HOME": scratch])
        XCTAssertNotEqual(again.0, 0)
        XCTAssertTrue(again.2.contains("changed"), again.2)
    }

    func testTwoAgentsSyncOverTLS() throws {
        let fingerprint = try printedFingerprint()
        let a = try TestAgent(server: server, user: "alice", password: "pw", device: "laptop")
        let b = try TestAgent(server: server, user: "alice", password: "pw", device: "desktop")
        try a.start(extra: ["--fingerprint", fingerprint])
        try b.start(extra: ["--fingerprint", fingerprint])
        try FileManager.default.createDirectory(atPath: a.directory + "/contacts", withIntermediateDirectories: true)
        try a.save("contacts", "ada", ["name": .string("Ada"), "phone": .string("555-0100")])
        eventually(10, b.log()) { (try? Data(contentsOf: URL(fileURLWithPath: b.path("contacts", "ada")))) != nil }
        let fields = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: b.path("contacts", "ada"))), format: nil)
        XCTAssertEqual((fields as? [String: Any])?["phone"] as? String, "555-0100")
    }

    func testAnAgentWithAWrongPinSaysSoInItsStatus() throws {
        let agent = try TestAgent(server: server, user: "alice", password: "pw", device: "laptop")
        try agent.start(extra: ["--fingerprint", String(repeating: "cd", count: 32)])
        eventually(10, agent.statusText()) { agent.statusText().contains("is not the expected one") }
    }

    /// Issue 18 item 11: a running agent whose server comes back with another certificate
    /// says so in its status and its log (the status kept an old "connection refused").
    func testAnAgentWhoseServerChangesItsCertificateSaysSo() throws {
        let agent = try TestAgent(server: server, user: "alice", password: "pw", device: "laptop")
        try agent.start(extra: ["--fingerprint", try printedFingerprint()])
        eventually(10, agent.statusText()) { agent.statusText().contains("\"connected\":true") }
        server.stop()
        try FileManager.default.removeItem(atPath: server.dataPath + "/tls")
        eventually(10, agent.statusText()) { agent.statusText().contains("\"connected\":false") }
        try server.start()
        eventually(15, agent.statusText()) { agent.statusText().contains("is not the expected one") }
        eventually(5, agent.log()) { agent.log().contains("is not the expected one") }
    }

    func testATranscriptReplaysThroughOpenSSLSClient() throws {
        let lines = try String(contentsOf: TranscriptTests.folder.appendingPathComponent("04-records.txt"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        // Every replaced state is kept (transcript 04 lists versions made a moment apart).
        let replayed = try TestServer(extraArguments: ["--tls"])
        for line in lines where line.hasPrefix("U: ") {
            let words = line.dropFirst(3).split(separator: " ").map(String.init)
            try replayed.addUser(words[0], password: words[1])
        }
        try replayed.start()
        let requests = lines.filter { $0.hasPrefix("C: ") }.map { $0.dropFirst(3) + "\n" }.joined() + "q QUIT\n"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "s_client", "-connect", "127.0.0.1:\(replayed.port)", "-quiet", "-verify_return_error",
                             "-CAfile", replayed.dataPath + "/tls/cert.pem"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(requests.utf8))
        let answers = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
        process.waitUntilExit()
        let expected = lines.filter { $0.hasPrefix("S: ") }.map { String($0.dropFirst(3)) }
        XCTAssertEqual(answers.count, expected.count + 1, answers.joined(separator: "\n"))
        var captures: [String: String] = [:]
        for (want, got) in zip(expected, answers) {
            XCTAssertTrue(TranscriptTests.match(expected: want, actual: got, captures: &captures), "expected \(want)\n   got \(got)")
        }
        XCTAssertEqual(answers.last, "q OK BYE")
    }

    /// Issue 43 item 6: TLS 1.2 took four ECDHE-ECDSA CBC suites (SHA-1 and SHA-256 MACs), which
    /// Mozilla's intermediate profile and testssl.sh list as obsolete. Both ports now offer
    /// AEAD suites only, and the profile's key exchange groups.
    func testTLS12OffersAEADSuitesOnlyOnTheLineAndHTTPPorts() throws {
        for suite in TLSContext.offeredSuites.tls12 { XCTAssertTrue(suite.hasPrefix("ECDHE-") && (suite.contains("GCM") || suite.contains("CHACHA20")), suite) }
        let both = try TestServer.running(["--tls", "--http-listen", "127.0.0.1:0"])
        func handshake(_ port: Int, _ cipher: String) throws -> (Bool, String) {
            let (status, output, _) = try PlistSyncBinary.runTool(
                "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-cipher", cipher, "-CAfile", both.dataPath + "/tls/cert.pem"])
            return (status == 0, output)
        }
        for port in [both.port, both.httpPort] {
            for obsolete in ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384"] {
                let (accepted, output) = try handshake(port, obsolete)
                XCTAssertFalse(accepted, "port \(port) accepts \(obsolete): \(output.suffix(300))")
            }
            for aead in ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"] {
                let (accepted, output) = try handshake(port, aead)
                XCTAssertTrue(accepted && output.contains("Cipher is \(aead)"), "port \(port) refuses \(aead): \(output.suffix(300))")
            }
            // Key exchange: Mozilla's intermediate groups only (sslyze flagged secp521r1 and X448).
            for (group, offered) in [("X25519", true), ("prime256v1", true), ("secp384r1", true), ("secp521r1", false), ("X448", false)] {
                let (status, output, _) = try PlistSyncBinary.runTool(
                    "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-groups", group, "-CAfile", both.dataPath + "/tls/cert.pem"])
                XCTAssertEqual(status == 0, offered, "port \(port), group \(group): \(output.suffix(300))")
            }
        }
    }
}
