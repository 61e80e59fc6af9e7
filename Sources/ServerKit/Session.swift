import EventLoop
import Foundation
import RecordStore
import SQLiteKit
import SyncCore
import SyncProtocol

/// One client connection's protocol state: framing, authentication, the ordered execution of
/// its requests, and its subscriptions.
///
/// Ordering: record writes (PUT, MOVE, DEL) are handed to the group committer as they arrive and
/// keep a reply slot each, filled when their commit lands; every other request waits until the
/// connection's earlier writes are answered, so replies leave in request order and a read sees
/// the connection's own writes. Loop-thread object.
final class Session {
    private unowned let server: Server
    let connection: TCPConnection
    let address: String
    private var framer: LineFramer

    private(set) var user: String?
    private var isAdmin = false
    private var watchesCollections = false
    /// Per subscribed collection, the seq the subscriber is known to have through.
    private var subscriptions: [String: Int64] = [:]

    private var inbox: [Pending] = []
    private var inboxHead = 0
    private var replySlots: [String?] = []
    private var replySlotsHead = 0
    private var awaitingAsync = false
    private var processing = false
    private var inputEnded = false
    private var readingPaused = false
    private(set) var closeReason: CloseReason?
    var lastActivity: UInt64

    /// Requests waiting for their turn beyond this pause reading from the socket.
    static let maxQueuedRequests = 4096
    /// Reply bytes waiting for the client beyond this pause reading from the socket.
    static let pauseReadingAtOutputBytes = 4 << 20

    private enum Pending {
        case command(tag: String, Command)
        case failure(LineParseError)
    }

    init(server: Server, connection: TCPConnection) {
        self.server = server
        self.connection = connection
        address = connection.peer?.host ?? "unknown"
        framer = LineFramer(maxLineBytes: server.configuration.limits.maxLineBytes)
        lastActivity = connection.loop.nowMilliseconds
        connection.onData = { [unowned self] bytes in received(bytes) }
        connection.onEnd = { [unowned self] end in
            if case .failed(let reason) = end {
                ServerLog.info("connection \(address): \(reason)")
                close(.socketError)
            } else {
                // A half-close: the client is done sending but still reads what it asked for.
                inputEnded = true
                closeIfInputDone()
            }
        }
        connection.onDrain = { [unowned self] in resumeReadingIfPaused() }
        connection.startReading()
    }


    // MARK: - Input

    private func received(_ bytes: [UInt8]) {
        guard closeReason == nil else { return }
        lastActivity = connection.loop.nowMilliseconds
        framer.append(bytes)
        do {
            while let line = try framer.nextLine() {
                do {
                    guard let request = try RequestParser.parse(line) else { continue }
                    do {
                        inbox.append(.command(tag: request.tag, try CommandParser.parse(request)))
                    } catch {
                        inbox.append(.failure(.tagged(request.tag, error)))
                    }
                } catch {
                    inbox.append(.failure(error))
                }
            }
        } catch {
            processInbox()
            sayGoodbye("TOO_LARGE", reason: .lineTooLong)
            return
        }
        processInbox()
    }

    private func processInbox() {
        // Replies filled during this pass call back in here; the running pass continues for them.
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while closeReason == nil, !awaitingAsync, inboxHead < inbox.count {
            let next = inbox[inboxHead]
            switch next {
            case .failure(.untagged(let error)):
                guard replySlotsHead == replySlots.count else { return }
                send(ResponseLine.untagged("ERR", error.code.rawValue, ResponseLine.sanitized(error.message)))
            case .failure(.tagged(let tag, let error)):
                guard replySlotsHead == replySlots.count else { return }
                send(ResponseLine.error(tag, error))
            case .command(let tag, let command):
                if command.isRecordWrite, user != nil {
                    submitWrite(tag, command)
                } else {
                    guard replySlotsHead == replySlots.count else { return }
                    execute(tag, command)
                }
            }
            inboxHead += 1
        }
        if inboxHead == inbox.count {
            inbox.removeAll(keepingCapacity: true)
            inboxHead = 0
        }
        applyBackpressure()
        closeIfInputDone()
    }

    private func closeIfInputDone() {
        if inputEnded, inbox.count == inboxHead, replySlotsHead == replySlots.count, !awaitingAsync {
            close(.eof)
        }
    }

    private func applyBackpressure() {
        let queued = inbox.count - inboxHead
        if !readingPaused, queued > Self.maxQueuedRequests || connection.pendingOutputBytes > Self.pauseReadingAtOutputBytes {
            readingPaused = true
            connection.stopReading()
        } else if readingPaused {
            resumeReadingIfPaused()
        }
    }

    private func resumeReadingIfPaused() {
        guard readingPaused, closeReason == nil, !inputEnded, !connection.isClosing else { return }
        if inbox.count - inboxHead <= Self.maxQueuedRequests / 2, connection.pendingOutputBytes <= Self.pauseReadingAtOutputBytes / 2 {
            readingPaused = false
            connection.startReading()
        }
    }

    // MARK: - Output

    private func send(_ text: String) {
        connection.write(text)
    }

    private func finishAsync(_ reply: String) {
        guard closeReason == nil else { return }
        awaitingAsync = false
        send(reply)
        processInbox()
    }

    private func fillSlot(_ index: Int, with reply: String) {
        guard closeReason == nil else { return }
        replySlots[index] = reply
        while replySlotsHead < replySlots.count, let ready = replySlots[replySlotsHead] {
            send(ready)
            replySlotsHead += 1
        }
        if replySlotsHead == replySlots.count {
            replySlots.removeAll(keepingCapacity: true)
            replySlotsHead = 0
            processInbox()
        }
    }

    /// Sends the batch's change lines this subscriber does not have yet, in one write; a
    /// subscriber whose unsent output would pass the limit gets the whole lines that fit and
    /// `* BYE SLOW`, rather than being buffered without bound.
    func deliver(_ changes: ChangeLines, collection: String) {
        guard closeReason == nil, let through = subscriptions[collection], changes.lastSeq > through else { return }
        subscriptions[collection] = changes.lastSeq
        let budget = server.configuration.limits.maxPendingOutputBytes - connection.pendingOutputBytes
        let (lines, complete) = changes.lines(after: through, within: budget)
        connection.write(lines)
        if !complete { sayGoodbye("SLOW", reason: .slow) }
    }

    /// Sends a live `* COLLECTION` line if this connection asked for COLLECTIONS.
    func collectionChanged(_ name: String, role: Role?, seq: Int64) {
        guard watchesCollections, closeReason == nil else { return }
        send("* COLLECTION \(name) \(role?.name ?? "none") \(seq)\n")
        if role == nil, subscriptions[name] != nil, !isAdmin {
            subscriptions[name] = nil
            server.hub.unsubscribe(self, from: name)
        }
    }

    /// Writes `* BYE <word>` and closes once it is sent.
    func sayGoodbye(_ word: String, reason: CloseReason) {
        guard closeReason == nil else { return }
        send("* BYE \(word)\n")
        close(reason)
    }

    /// Ends the session with exactly one reason, logged once.
    func close(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        switch reason {
        case .eof, .quit: break
        default: ServerLog.info("closing connection from \(address) (\(user ?? "-")): \(reason.rawValue)")
        }
        for collection in subscriptions.keys { server.hub.unsubscribe(self, from: collection) }
        subscriptions.removeAll()
        if reason == .socketError {
            connection.close()
        } else {
            connection.closeAfterWriting()
        }
    }

    // MARK: - Requests

    private func execute(_ tag: String, _ command: Command) {
        guard user != nil || command.allowedBeforeAuth else {
            send(ResponseLine.error(tag, ProtocolError(.authRequired, "log in first with AUTH")))
            return
        }
        do {
            try perform(tag, command)
        } catch let error as ProtocolError {
            send(ResponseLine.error(tag, error))
        } catch {
            ServerLog.error("request \(tag) from \(address) failed: \(error)")
            send(ResponseLine.error(tag, ProtocolError(.internal, "the server could not read its store")))
        }
    }

    private func perform(_ tag: String, _ command: Command) throws {
        switch command {
        case .hello(let version, _):
            guard version == "1" else {
                throw ProtocolError(.unsupportedVersion, "this server speaks protocol 1")
            }
            send(ResponseLine.ok(tag, "HELLO", "1", server.serverID, server.limitsJSON))
        case .auth(let name, let password):
            authenticate(tag, name: name, password: password)
        case .authToken(let token):
            let owner = try server.accounts.tokenOwner(hash: Crypto.sha256Hex(token))
            guard let owner, let account = try server.accounts.user(named: owner) else {
                awaitingAsync = true
                failLogin(tag)
                return
            }
            loggedIn(tag, account)
        case .tokenNew(let label):
            let token = Crypto.newToken()
            storeOperation(tag, .createToken(hash: Crypto.sha256Hex(token), user: user!, label: label)) { _ in
                ResponseLine.ok(tag, "TOKEN", token)
            }
        case .tokenRevoke(let token):
            storeOperation(tag, .revokeToken(hash: Crypto.sha256Hex(token), user: isAdmin ? nil : user!)) { _ in
                ResponseLine.ok(tag, "TOKEN", "REVOKED")
            }
        case .create(let name):
            let owner = user!
            storeOperation(tag, .createCollection(name: name, owner: owner)) { [server] _ in
                server.collectionCreated(name, owner: owner)
                return ResponseLine.ok(tag, "CREATE", name)
            }
        case .collections:
            watchesCollections = true
            let visible = server.directory.visible(to: user!, isAdmin: isAdmin)
            for entry in visible { send("* COLLECTION \(entry.name) \(entry.role.name) \(entry.seq)\n") }
            send(ResponseLine.ok(tag, "COLLECTIONS", String(visible.count)))
        case .grant(let collection, let grantee, let role):
            try requireRole(.admin, collection)
            storeOperation(tag, .grant(collection: collection, user: grantee, role: role)) { [server] _ in
                server.granted(role, to: grantee, in: collection)
                return ResponseLine.ok(tag, "GRANT")
            }
        case .put, .move, .delete:
            submitWrite(tag, command)
        case .get(let collection, let id):
            try requireRole(.read, collection)
            guard let state = try server.reader.record(collection, id) else {
                throw ProtocolError(.notFound, "no record \(ValueJSON.quoted(id)) in \(collection)")
            }
            send(ResponseLine.ok(tag, "GET", collection, ResponseLine.argument(id), state.wireTail))
        case .list(let collection):
            try requireRole(.read, collection)
            let (records, seq) = try server.reader.list(collection)
            var output = ""
            for record in records {
                output += "* RECORD \(collection) \(ResponseLine.argument(record.id)) \(record.wireTail)\n"
            }
            send(output)
            send(ResponseLine.ok(tag, "LIST", collection, String(records.count), String(seq)))
        case .subscribe(let collection, let since):
            try requireRole(.read, collection)
            guard let (changes, seq) = try server.reader.changes(collection, since: since) else {
                throw ProtocolError(.expired, "changes after \(since) are no longer kept; resubscribe with SINCE 0")
            }
            var output = ""
            for change in changes { output += change.line }
            send(output)
            send(ResponseLine.ok(tag, "SUB", collection, String(seq)))
            subscriptions[collection] = seq
            server.hub.subscribe(self, to: collection)
        case .unsubscribe(let collection):
            subscriptions[collection] = nil
            server.hub.unsubscribe(self, from: collection)
            send(ResponseLine.ok(tag, "UNSUB", collection))
        case .ping:
            send(ResponseLine.ok(tag, "PONG"))
        case .stats:
            send(ResponseLine.ok(tag, "STATS", server.statsJSON()))
        case .quit:
            send(ResponseLine.ok(tag, "BYE"))
            close(.quit)
        }
    }

    private func requireRole(_ needed: Role, _ collection: String) throws(ProtocolError) {
        guard server.directory.exists(collection) else {
            throw ProtocolError(.notFound, "no collection \(collection)")
        }
        guard let role = server.directory.role(of: user!, isAdmin: isAdmin, in: collection) else {
            throw ProtocolError(.forbidden, "\(user!) has no access to \(collection)")
        }
        guard role >= needed else {
            throw ProtocolError(.forbidden, "\(user!) has \(role.name) access to \(collection); this needs \(needed.name)")
        }
    }

    // MARK: - Writes

    private func submitWrite(_ tag: String, _ command: Command) {
        let slot = replySlots.count
        replySlots.append(nil)
        let operation: StoreOperation
        let verb: String
        do throws(ProtocolError) {
            switch command {
            case .put(let collection, let id, let baseRev, let json):
                try requireRole(.write, collection)
                guard json.utf8.count <= server.configuration.limits.maxRecordBytes else {
                    throw ProtocolError(.tooLarge, "record is \(json.utf8.count) bytes; the limit is \(server.configuration.limits.maxRecordBytes)")
                }
                operation = .put(collection: collection, id: id, baseRev: baseRev, fieldsJSON: json)
                verb = "PUT"
            case .move(let collection, let id, let baseRev, let placement):
                try requireRole(.write, collection)
                operation = .move(collection: collection, id: id, baseRev: baseRev, placement: placement)
                verb = "MOVE"
            case .delete(let collection, let id, let baseRev):
                try requireRole(.write, collection)
                operation = .delete(collection: collection, id: id, baseRev: baseRev)
                verb = "DEL"
            default:
                // Only record writes come here; any other command must still get its slot answered.
                throw ProtocolError(.internal, "not a record write")
            }
        } catch {
            fillSlot(slot, with: ResponseLine.error(tag, error))
            return
        }
        server.committer.submit(operation) { [self] result in
            fillSlot(slot, with: Self.writeReply(tag, verb, result))
        }
    }

    private static func writeReply(_ tag: String, _ verb: String, _ result: Result<StoreOutcome, StoreError>) -> String {
        switch result {
        case .success(.changed(let change)):
            return ResponseLine.ok(tag, verb, change.collection, ResponseLine.argument(change.state.id), String(change.state.rev), String(change.seq))
        case .success(.conflict(let collection, let id, let current)):
            return "\(tag) ERR CONFLICT \(collection) \(ResponseLine.argument(id)) \(current?.wireTail ?? "0 - MISSING")\n"
        case .success(.refused(let error)):
            return ResponseLine.error(tag, error)
        case .success(.done):
            return ResponseLine.error(tag, ProtocolError(.internal, "unexpected store outcome"))
        case .failure:
            return ResponseLine.error(tag, ProtocolError(.internal, "the write could not be committed; retry"))
        }
    }

    /// Runs a non-record store operation as a barrier: later requests wait for its reply.
    private func storeOperation(_ tag: String, _ operation: StoreOperation, onDone: @escaping (StoreOutcome) -> String) {
        awaitingAsync = true
        server.committer.submit(operation) { [self] result in
            switch result {
            case .success(.done):
                finishAsync(onDone(.done))
            case .success(.refused(let error)):
                finishAsync(ResponseLine.error(tag, error))
            default:
                finishAsync(ResponseLine.error(tag, ProtocolError(.internal, "the change could not be committed; retry")))
            }
        }
    }

    // MARK: - Login

    private func authenticate(_ tag: String, name: String, password: String) {
        awaitingAsync = true
        let account: Accounts.User?
        do {
            account = try server.accounts.user(named: name)
        } catch {
            ServerLog.error("reading user \(name): \(error)")
            finishAsync(ResponseLine.error(tag, ProtocolError(.internal, "cannot read accounts")))
            return
        }
        let stored = account?.passwordHash ?? PasswordHasher.decoy
        connection.loop.runBlocking({ PasswordHasher.verify(password, against: stored) }, then: { [self] matches in
            guard closeReason == nil else { return }
            if matches, let account {
                loggedIn(tag, account)
            } else {
                failLogin(tag)
            }
        })
    }

    private func loggedIn(_ tag: String, _ account: Accounts.User) {
        server.throttle.succeeded(from: address)
        user = account.name
        isAdmin = account.isAdmin
        if awaitingAsync {
            finishAsync(ResponseLine.ok(tag, "AUTH", account.name))
        } else {
            send(ResponseLine.ok(tag, "AUTH", account.name))
        }
    }

    /// Answers a failed login after a delay that grows with the address's recent failures.
    private func failLogin(_ tag: String) {
        let delay = server.throttle.failed(from: address, now: connection.loop.nowMilliseconds)
        server.after(milliseconds: delay) { [self] in
            finishAsync(ResponseLine.error(tag, ProtocolError(.authFailed, "wrong user name, password or token")))
        }
    }
}
