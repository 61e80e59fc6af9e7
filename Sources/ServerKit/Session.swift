import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// One client connection's protocol state machine: framing, authentication, the ordered
/// execution of its requests, and its subscriptions. Bytes, the end of input, output drains
/// and commit outcomes come in through its input methods; everything it decides goes out as
/// `SessionAction`s (send, commit, subscribe, pause reading, close with a reason) through
/// `perform`: the connection's part to its `SessionTransport` (a socket when serving, a buffer
/// when the transcripts are replayed in memory), the rest to the server's committer and hub.
///
/// Ordering: record writes (PUT, MOVE, DEL) are handed to the group committer as they arrive and
/// keep a reply slot each, filled when their commit lands; every other request waits until the
/// connection's earlier writes are answered, so replies leave in request order and a read sees
/// the connection's own writes. Loop-thread object.
///
/// Bounds (each stops the session taking more, never buffers without limit): requests are not
/// started while the client has more than `pauseAtOutputBytes` of replies unread (every reply
/// kind, and LIST and SUB replays are produced page by page as the client reads); lines are
/// parsed only while fewer than `maxQueuedRequests` (and `maxQueuedRequestBytes`) wait, and
/// reading the socket pauses while that many do; writes are not handed to the committer beyond
/// `maxWritesInFlight` / `maxWriteBytesInFlight` per connection or while the committer's own
/// queue is full. Before login every bound is far smaller (`preAuth…`); across connections the
/// server keeps one budget (`Server+MemoryBudget`).
final class Session {
    private unowned let server: Server
    private let transport: SessionTransport
    /// Carries out each action the session decides on; a test may wrap it to watch them.
    var perform: (SessionAction) -> Void = { _ in }
    let address: String
    private var framer: LineFramer

    private(set) var user: String?
    private var isAdmin = false
    /// The password hash the user logged in against, or the token's hash: when either is gone
    /// from the store (passwd, remove, revoke), so is this session.
    private(set) var passwordHash: String?
    private(set) var tokenHash: String?
    private var watchesCollections = false
    /// Per subscribed collection, the seq the subscriber is known to have through.
    private var subscriptions: [String: Int64] = [:]
    var isSubscribed: Bool { !subscriptions.isEmpty }

    private var inbox = FIFO<Pending>()
    private var inboxBytes = 0
    private var replySlots: [(reply: String?, bytes: Int)] = []
    private var replySlotsHead = 0
    private var writeBytesInFlight = 0
    private var awaitingAsync = false
    /// The reply in progress that is written a page at a time (LIST, SUB replay), so a client
    /// that does not read holds at most a page beyond the output limit: each call gives the next
    /// page and whether it was the last.
    private var reply: (() -> (text: String, done: Bool))?
    private var processing = false
    private var inputEnded = false
    private var readingPaused = false
    /// The server is shutting down: reading stopped for good.
    private var readingStopped = false
    private(set) var closeReason: CloseReason?
    /// When the last complete request line arrived (bytes of an unfinished line do not count).
    private(set) var lastActivity: UInt64
    let connectedAt: UInt64
    /// Whether a login answer is being worked out (the session is not idle before auth then).
    var isLoggingIn: Bool { awaitingAsync && user == nil }

    /// Requests parsed and waiting for their turn, at most; lines beyond wait as bytes, and
    /// reading from the socket pauses.
    static let maxQueuedRequests = 4096
    /// Bytes of requests waiting for their turn beyond which reading pauses.
    static let maxQueuedRequestBytes = 4 << 20
    /// Reply bytes unread by the client beyond which no further request is started (and
    /// reading pauses); what is started resumes as the client reads.
    static let pauseAtOutputBytes = 4 << 20
    /// Record writes one connection may have waiting for their commit.
    static let maxWritesInFlight = 1024
    static let maxWriteBytesInFlight = 8 << 20
    /// Lines or changes per page of a LIST or SUB replay.
    static let replayPageSize = 512
    /// Before login a connection holds far less (its requests are HELLO and AUTH), so a crowd
    /// of connections that never log in and never read cannot add up (issue 19).
    static let preAuthMaxQueuedRequests = 16
    static let preAuthMaxQueuedRequestBytes = 16 << 10
    static let preAuthPauseAtOutputBytes = 16 << 10
    /// Requests a connection may make before it has logged in (HELLO, AUTH, a retry or two).
    static let preAuthMaxRequests = 16
    private var preAuthRequests = 0

    private var queueLimit: Int { user == nil ? Self.preAuthMaxQueuedRequests : Self.maxQueuedRequests }
    private var queueByteLimit: Int { user == nil ? Self.preAuthMaxQueuedRequestBytes : Self.maxQueuedRequestBytes }
    private var outputPause: Int { user == nil ? Self.preAuthPauseAtOutputBytes : Self.pauseAtOutputBytes }
    /// A line too long was found: what came before it is answered, then `* BYE TOO_LARGE`.
    private var lineTooLong = false

    private enum Pending {
        case command(tag: String, Command, bytes: Int)
        case failure(LineParseError)

        var bytes: Int {
            if case .command(_, _, let bytes) = self { return bytes }
            return 0
        }
    }

    init(server: Server, transport: SessionTransport) {
        self.server = server
        self.transport = transport
        address = transport.peerHost ?? "unknown"
        framer = LineFramer(maxLineBytes: server.configuration.preAuthMaxLineBytes)
        connectedAt = server.loop.nowMilliseconds
        lastActivity = connectedAt
        perform = { [unowned self] action in carryOut(action) }
        transport.attach(self)
    }

    private func carryOut(_ action: SessionAction) {
        switch action {
        case .send(let text):
            server.noteQueued(text.utf8.count)
            transport.perform(action)
        case .sendBytes(let bytes):
            server.noteQueued(bytes.count)
            transport.perform(action)
        case .commit(let operation, let completion): server.committer.submit(operation, completion: completion)
        case .subscribe(let collection): server.hub.subscribe(self, to: collection)
        case .unsubscribe(let collection): server.hub.unsubscribe(self, from: collection)
        default: transport.perform(action)
        }
    }

    /// Bytes sent and not yet taken by the client.
    var pendingOutputBytes: Int { transport.pendingOutputBytes }
    /// Bytes this connection holds: output not yet taken, requests read and not yet done.
    var bufferedBytes: Int { transport.pendingOutputBytes + inboxBytes + framer.bufferedByteCount }

    // MARK: - Input

    /// A half-close: the client is done sending but still reads what it asked for.
    func endOfInput() {
        inputEnded = true
        closeIfInputDone()
    }

    /// The connection failed (reset, TLS error).
    func inputFailed(_ reason: String) {
        ServerLog.info("connection \(address): \(reason)")
        close(.socketError)
    }

    /// The client took what was waiting to be sent.
    func outputDrained() {
        resumeReadingIfPaused()
        processInbox()
    }

    /// The connection is gone, after `close`: the server forgets the session.
    func closed() {
        server.sessionGone(self)
    }

    /// Stops reading for good (the server is shutting down); what was asked is still answered.
    func stopReading() {
        guard !readingStopped else { return }
        readingStopped = true
        perform(.pauseReading)
    }

    /// Ends the connection at once, sent or not (a client that does not read at shutdown).
    func abort() {
        perform(.closeNow)
    }

    func received(_ bytes: [UInt8]) {
        guard closeReason == nil else { return }
        framer.append(bytes)
        if bytes.contains(0x0A) { lastActivity = server.loop.nowMilliseconds }
        processInbox()
    }

    /// Parses waiting lines into the inbox while it has room: the rest stay as bytes in the
    /// framer (far smaller than parsed requests) until their turn comes.
    private func takeLines() {
        guard !lineTooLong else { return }
        do {
            while inbox.count < queueLimit, inboxBytes < queueByteLimit, let line = try framer.nextLine() {
                let pending: Pending
                do {
                    guard let request = try RequestParser.parse(line) else { continue }
                    do {
                        pending = .command(tag: request.tag, try CommandParser.parse(request), bytes: line.count)
                    } catch {
                        pending = .failure(.tagged(request.tag, error))
                    }
                } catch {
                    pending = .failure(error)
                }
                inbox.append(pending)
                inboxBytes += pending.bytes
            }
        } catch {
            lineTooLong = true
        }
    }

    private func processInbox() {
        // Replies filled during this pass call back in here; the running pass continues for them.
        guard !processing, closeReason == nil else { return }
        processing = true
        defer { processing = false }
        requests: while closeReason == nil {
            if reply != nil {
                pumpReply()
                if reply != nil { break }
            }
            takeLines()
            guard !awaitingAsync, let next = inbox.first else { break }
            // Replies the client has not read yet: start nothing more until it reads (onDrain).
            guard transport.pendingOutputBytes <= outputPause else { break }
            let slotsEmpty = replySlotsHead == replySlots.count
            switch next {
            case .failure(.untagged(let error)):
                guard slotsEmpty else { break requests }
                send(ResponseLine.untagged("ERR", error.code.rawValue, ResponseLine.sanitized(error.message)))
            case .failure(.tagged(let tag, let error)):
                guard slotsEmpty else { break requests }
                send(ResponseLine.error(tag, error))
            case .command(let tag, let command, let bytes):
                if command.isRecordWrite, user != nil {
                    guard replySlots.count - replySlotsHead < Self.maxWritesInFlight,
                        writeBytesInFlight < Self.maxWriteBytesInFlight
                    else { break requests }
                    guard server.committer.hasRoom else {
                        server.waitForCommitRoom(self)
                        break requests
                    }
                    submitWrite(tag, command, bytes: bytes)
                } else {
                    guard slotsEmpty else { break requests }
                    execute(tag, command)
                }
            }
            _ = inbox.popFirst()
            inboxBytes -= next.bytes
            // A connection that keeps asking without logging in (HELLO answers are 25 times
            // the request) is told to log in and closed.
            if user == nil, !isLoggingIn {
                preAuthRequests += 1
                if preAuthRequests >= Self.preAuthMaxRequests { sayGoodbye("AUTH_REQUIRED", reason: .authRequired) }
            }
        }
        if lineTooLong, inbox.isEmpty {
            sayGoodbye("TOO_LARGE", reason: .lineTooLong)
            return
        }
        applyBackpressure()
        closeIfInputDone()
    }

    private func closeIfInputDone() {
        if inputEnded, inbox.isEmpty, !framer.hasCompleteLine, replySlotsHead == replySlots.count, !awaitingAsync, reply == nil {
            close(.eof)
        }
    }

    /// The inbox is full only while lines wait in the framer too, so reading pauses then;
    /// once it is half empty the framer holds no whole line, and reading resumes.
    private var mustPauseReading: Bool {
        inbox.count >= queueLimit || inboxBytes >= queueByteLimit || transport.pendingOutputBytes > outputPause
    }

    private func applyBackpressure() {
        if !readingPaused, mustPauseReading {
            readingPaused = true
            perform(.pauseReading)
        } else if readingPaused {
            resumeReadingIfPaused()
        }
    }

    private func resumeReadingIfPaused() {
        guard readingPaused, closeReason == nil, !inputEnded, !readingStopped else { return }
        if inbox.count <= queueLimit / 2, inboxBytes <= queueByteLimit / 2, transport.pendingOutputBytes <= outputPause / 2 {
            readingPaused = false
            perform(.resumeReading)
        }
    }

    /// Called by the server when the committer has room again after this session waited.
    func commitRoomAvailable() {
        processInbox()
    }

    /// Sends pages of the reply in progress while the client keeps up.
    private func pumpReply() {
        while let nextPage = reply, closeReason == nil, transport.pendingOutputBytes <= outputPause {
            let (text, done) = nextPage()
            send(text)
            if done { reply = nil }
        }
    }

    // MARK: - Output

    private func send(_ text: String) {
        perform(.send(text))
    }

    private func finishAsync(_ reply: String) {
        guard closeReason == nil else { return }
        awaitingAsync = false
        send(reply)
        processInbox()
    }

    private func fillSlot(_ index: Int, with reply: String) {
        guard closeReason == nil else { return }
        replySlots[index].reply = reply
        writeBytesInFlight -= replySlots[index].bytes
        let before = replySlotsHead
        while replySlotsHead < replySlots.count, let ready = replySlots[replySlotsHead].reply {
            send(ready)
            replySlotsHead += 1
        }
        if replySlotsHead == replySlots.count {
            replySlots.removeAll(keepingCapacity: replySlots.capacity <= 4096)
            replySlotsHead = 0
        }
        if replySlotsHead != before || replySlots.isEmpty { processInbox() }
    }

    /// Sends the batch's change lines this subscriber does not have yet, in one write; a
    /// subscriber whose unsent output would pass the limit gets the whole lines that fit and
    /// `* BYE SLOW`, rather than being buffered without bound.
    func deliver(_ changes: ChangeLines, collection: String) {
        guard closeReason == nil, let through = subscriptions[collection], changes.lastSeq > through else { return }
        subscriptions[collection] = changes.lastSeq
        let budget = server.configuration.limits.maxPendingOutputBytes - transport.pendingOutputBytes
        let (lines, complete) = changes.lines(after: through, within: budget)
        perform(.sendBytes(lines))
        if !complete { sayGoodbye("SLOW", reason: .slow) }
    }

    /// Sends a live `* COLLECTION` line if this connection asked for COLLECTIONS, and ends a
    /// subscription the user may no longer read (`* UNSUB <collection> REVOKED`).
    func collectionChanged(_ name: String, role: Role?, seq: Int64) {
        guard closeReason == nil, user != nil else { return }
        if watchesCollections { send(ServerNotice.collection(name: name, role: role, seq: seq).line) }
        if role == nil, !isAdmin {
            endSubscription(name)
            endSubscription(Names.conflictsCollection(of: name))
        }
    }

    /// The collection is gone: `* DROPPED <name>` for a member (or a server admin) and its
    /// subscriptions end.
    func collectionDropped(_ name: String, wasMember: Bool) {
        guard closeReason == nil, user != nil else { return }
        let subscribed = dropSubscription(name)
        let companionSubscribed = dropSubscription(Names.conflictsCollection(of: name))
        let wasSubscribed = subscribed || companionSubscribed
        if wasMember || isAdmin || wasSubscribed { send(ServerNotice.dropped(name).line) }
    }

    /// The collection has a new name: `* RENAMED <old> <new>` for a member (or a server admin);
    /// its subscriptions carry on under the new name, at the same seq.
    func collectionRenamed(_ from: String, to: String, isMember: Bool) {
        guard closeReason == nil, user != nil else { return }
        var subscribed = false
        for (old, new) in [(from, to), (Names.conflictsCollection(of: from), Names.conflictsCollection(of: to))] {
            guard let through = subscriptions.removeValue(forKey: old) else { continue }
            subscriptions[new] = through
            subscribed = true
        }
        if isMember || isAdmin || subscribed { send(ServerNotice.renamed(from: from, to: to).line) }
    }

    /// Ends this session's subscription to `collection` if it may no longer read it.
    func recheckAccess() {
        guard let user, closeReason == nil else { return }
        for collection in subscriptions.keys where server.directory.role(of: user, isAdmin: isAdmin, in: collection) == nil {
            endSubscription(collection)
        }
    }

    private func endSubscription(_ collection: String) {
        if dropSubscription(collection) { send(ServerNotice.unsubscribedRevoked(collection).line) }
    }

    /// Stops sending `collection`'s changes; whether it was subscribed.
    @discardableResult
    private func dropSubscription(_ collection: String) -> Bool {
        guard subscriptions.removeValue(forKey: collection) != nil else { return false }
        perform(.unsubscribe(collection))
        return true
    }

    /// The account or token this session logged in with is gone: say so and close.
    func revoke() {
        sayGoodbye("REVOKED", reason: .revoked)
    }

    /// The user's server-admin flag changed under the running server.
    func updateAdmin(_ admin: Bool) {
        isAdmin = admin
    }

    /// Writes `* BYE <word>` and closes at once, sent or not: the server's memory budget is
    /// short, and what this connection holds is what it needs back.
    func shed(_ word: String, reason: CloseReason) {
        guard closeReason == nil else { return }
        sayGoodbye(word, reason: reason)
        perform(.closeNow)
    }

    /// Writes `* BYE <word>` and closes once it is sent.
    func sayGoodbye(_ word: String, reason: CloseReason) {
        guard closeReason == nil else { return }
        send(ServerNotice.bye(word).line)
        close(reason)
    }

    /// Ends the session with exactly one reason, logged once.
    func close(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        ServerLog.event("disconnect", ["address": address, "user": user ?? "-", "reason": reason.rawValue])
        for collection in subscriptions.keys { perform(.unsubscribe(collection)) }
        subscriptions.removeAll()
        reply = nil
        server.sessionClosing(self)
        perform(.close(reason))
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
            awaitingAsync = true
            server.logins.checkToken(token, from: address, isStillWanted: { [weak self] in self?.closeReason == nil }) { [self] result in
                switch result {
                case .success(let (account, hash)):
                    loggedIn(tag, account, tokenHash: hash)
                    // For the devices list; nobody waits for it.
                    perform(.commit(.touchToken(hash: hash, at: Int64(Date().timeIntervalSince1970)), completion: { _ in }))
                case .failure(let refusal): refuseLogin(tag, refusal, user: nil)
                }
            }
        case .tokenNew(let label):
            let token = Crypto.newToken()
            storeOperation(tag, .createToken(hash: Crypto.sha256Hex(token), user: user!, label: label)) { _ in
                ResponseLine.ok(tag, "TOKEN", token)
            }
        case .tokenList:
            let tokens = try server.store.tokens(of: user!)
            for token in tokens { send(ServerNotice.token(token, isThisConnection: token.hash == tokenHash).line) }
            send(ResponseLine.ok(tag, "TOKEN", "LIST", String(tokens.count)))
        case .tokenRevoke(let tokenOrID):
            let hash = try revocableTokenHash(tokenOrID)
            storeOperation(tag, .revokeToken(hash: hash, user: isAdmin ? nil : user!)) { [server] _ in
                // This connection too, if it logged in with that token: after the OK goes out.
                server.loop.atEndOfTurn { server.tokenRevoked(hash) }
                return ResponseLine.ok(tag, "TOKEN", "REVOKED")
            }
        case .create(let name):
            let owner = user!
            let quota = server.configuration.maxCollectionsPerUser
            if !isAdmin, quota > 0, server.directory.owned(by: owner) >= quota {
                throw ProtocolError(.quota, "\(owner) owns \(quota) collections, the most this server allows (--max-collections-per-user)")
            }
            storeOperation(tag, .createCollection(name: name, owner: owner)) { [server] _ in
                server.collectionCreated(name, owner: owner)
                return ResponseLine.ok(tag, "CREATE", name)
            }
        case .drop(let collection):
            try requireRole(.admin, collection)
            storeOperation(tag, .dropCollection(name: collection)) { [server, user, address] _ in
                ServerLog.event("drop", ["collection": collection, "by": user ?? "-", "address": address])
                server.collectionDropped(collection)
                return ResponseLine.ok(tag, "DROP", collection)
            }
        case .rename(let from, let to):
            try requireRole(.admin, from)
            guard !server.directory.exists(to) else { throw ProtocolError(.exists, "collection \(to) exists") }
            storeOperation(tag, .renameCollection(from: from, to: to)) { [server, user, address] _ in
                ServerLog.event("rename", ["collection": from, "to": to, "by": user ?? "-", "address": address])
                server.collectionRenamed(from, to: to)
                return ResponseLine.ok(tag, "RENAME", from, to)
            }
        case .collections:
            watchesCollections = true
            let visible = server.directory.visible(to: user!, isAdmin: isAdmin)
            for entry in visible { send(ServerNotice.collection(name: entry.name, role: entry.role, seq: entry.seq).line) }
            send(ResponseLine.ok(tag, "COLLECTIONS", String(visible.count)))
        case .grant(let collection, let grantee, let role):
            try requireRole(.admin, collection)
            storeOperation(tag, .grant(collection: collection, user: grantee, role: role)) { [server, user, address] _ in
                ServerLog.event("grant", ["collection": collection, "to": grantee, "role": role?.name ?? "none", "by": user ?? "-", "address": address])
                server.granted(role, to: grantee, in: collection)
                return ResponseLine.ok(tag, "GRANT")
            }
        case .put, .move, .delete:
            submitWrite(tag, command, bytes: 0)
        case .get(let collection, let id):
            try requireRole(.read, collection)
            guard let state = try server.store.record(collection, id) else {
                throw ProtocolError(.notFound, "no record \(ValueJSON.quoted(id)) in \(collection)")
            }
            send(ResponseLine.ok(tag, "GET", collection, ResponseLine.argument(id), state.wireTail))
        case .list(let collection):
            try requireRole(.read, collection)
            // One consistent snapshot, written out a page at a time as the client reads it.
            let (records, seq) = try server.store.list(collection)
            var next = 0
            reply = { () -> (String, Bool) in
                var output = ""
                let end = min(records.count, next + Self.replayPageSize)
                for record in records[next..<end] {
                    output += ServerNotice.record(collection: collection, state: record).line
                }
                next = end
                guard next == records.count else { return (output, false) }
                return (output + ResponseLine.ok(tag, "LIST", collection, String(records.count), String(seq)), true)
            }
        case .subscribe(let collection, let since):
            try requireRole(.read, collection)
            // A new SUB replaces the old one: nothing live is sent until its replay is done.
            dropSubscription(collection)
            startReplay(tag, collection, since: since)
        case .unsubscribe(let collection):
            dropSubscription(collection)
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

    /// Replays changes after `since` a page at a time (each page a fresh read, so changes that
    /// commit meanwhile are picked up by later pages, in seq order), then subscribes with no gap:
    /// the last page and the subscription happen in the same loop turn.
    private func startReplay(_ tag: String, _ collection: String, since: Int64) {
        var cursor = since
        reply = { [unowned self] () -> (String, Bool) in
            let page: (changes: [Change], seq: Int64)?
            do {
                page = try server.store.changes(collection, since: cursor, limit: Self.replayPageSize)
            } catch {
                ServerLog.error("replaying \(collection) for \(address): \(error)")
                return (ResponseLine.error(tag, ProtocolError(.internal, "the server could not read its store")), true)
            }
            guard let page else {
                return (ResponseLine.error(tag, ProtocolError(.expired, "changes after \(cursor) are no longer kept; resubscribe with SINCE 0")), true)
            }
            var output = ""
            for change in page.changes { output += change.line }
            guard page.changes.count < Self.replayPageSize else {
                cursor = page.changes.last!.seq
                return (output, false)
            }
            let through = max(page.seq, page.changes.last?.seq ?? 0)
            subscriptions[collection] = through
            perform(.subscribe(collection))
            return (output + ResponseLine.ok(tag, "SUB", collection, String(through)), true)
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

    private func submitWrite(_ tag: String, _ command: Command, bytes: Int) {
        let slot = replySlots.count
        replySlots.append((nil, bytes))
        writeBytesInFlight += bytes
        let operation: StoreOperation
        let verb: String
        var reservation: (owner: String, bytes: Int)?
        do throws(ProtocolError) {
            if server.diskFull, !command.isDelete {
                throw ProtocolError(.noSpace, "the server's disk is full: only DEL is accepted until it has room")
            }
            switch command {
            case .put(let collection, let id, let baseRev, let json):
                try requireRole(.write, collection)
                guard json.utf8.count <= server.configuration.limits.maxRecordBytes else {
                    throw ProtocolError(.tooLarge, "record is \(json.utf8.count) bytes; the limit is \(server.configuration.limits.maxRecordBytes)")
                }
                reservation = try reserveQuota(collection, adding: json.utf8.count, creating: baseRev == 0)
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
        perform(.commit(operation, completion: { [self] result in
            if let reservation { server.directory.release(reservation.bytes, reservedFor: reservation.owner) }
            fillSlot(slot, with: Self.writeReply(tag, verb, result))
        }))
    }

    /// With `--max-bytes-per-user`, a PUT into a collection whose owner is at the quota is
    /// refused: a create when it would pass it, an update once the owner is over it (an update
    /// may shrink a record; a DEL is always allowed, so space can be freed). Writes admitted and
    /// not yet committed count as their whole size, so writes in one batch cannot pass the quota
    /// together; the reservation (returned) ends when the write's commit does.
    private func reserveQuota(_ collection: String, adding bytes: Int, creating: Bool) throws(ProtocolError) -> (owner: String, bytes: Int)? {
        let quota = server.configuration.maxBytesPerUser
        guard quota > 0, let owner = server.directory.owner(of: collection) else { return nil }
        let used = server.directory.bytesClaimed(by: owner)
        guard creating ? used + bytes > quota : used >= quota else {
            server.directory.reserve(bytes, for: owner)
            return (owner, bytes)
        }
        throw ProtocolError(.quota, "the collections of \(owner) hold \(used) bytes (writes in progress included); the limit is \(quota) (--max-bytes-per-user)")
    }

    private static func writeReply(_ tag: String, _ verb: String, _ result: Result<StoreOutcome, StoreFailure>) -> String {
        switch result {
        case .success(.changed(let change)), .success(.rebalanced(let change, _)):
            return ResponseLine.ok(tag, verb, change.collection, ResponseLine.argument(change.state.id), String(change.state.rev), String(change.seq))
        case .success(.conflict(let collection, let id, let current)):
            return "\(tag) ERR CONFLICT \(collection) \(ResponseLine.argument(id)) \(current?.wireTail ?? "0 - MISSING")\n"
        case .success(.refused(let error)):
            return ResponseLine.error(tag, error)
        case .success(.done):
            return ResponseLine.error(tag, ProtocolError(.internal, "unexpected store outcome"))
        case .failure(let error):
            return ResponseLine.error(tag, commitFailure(error))
        }
    }

    private static func commitFailure(_ error: StoreFailure) -> ProtocolError {
        error.isDiskFull
            ? ProtocolError(.noSpace, "the server's disk is full; nothing was written; retry later")
            : ProtocolError(.internal, "the change could not be committed; retry")
    }

    /// Runs a non-record store operation as a barrier: later requests wait for its reply.
    private func storeOperation(_ tag: String, _ operation: StoreOperation, onDone: @escaping (StoreOutcome) -> String) {
        awaitingAsync = true
        perform(.commit(operation, completion: { [self] result in
            switch result {
            case .success(.done):
                finishAsync(onDone(.done))
            case .success(.refused(let error)):
                finishAsync(ResponseLine.error(tag, error))
            case .failure(let error):
                finishAsync(ResponseLine.error(tag, Self.commitFailure(error)))
            default:
                finishAsync(ResponseLine.error(tag, ProtocolError(.internal, "the change could not be committed; retry")))
            }
        }))
    }

    /// The hash of the token `TOKEN REVOKE` names: the token itself, or its id from TOKEN LIST
    /// (among the user's own tokens; a server admin's, among all).
    private func revocableTokenHash(_ tokenOrID: String) throws(ProtocolError) -> String {
        guard TokenInfo.isID(tokenOrID) else { return Crypto.sha256Hex(tokenOrID) }
        let matching = ((try? server.store.tokens(of: isAdmin ? nil : user!)) ?? []).filter { $0.id == tokenOrID }
        guard let first = matching.first else { throw ProtocolError(.notFound, "no such token") }
        guard matching.count == 1 else { throw ProtocolError(.badRequest, "more than one token has id \(tokenOrID); revoke it by the token") }
        return first.hash
    }

    // MARK: - Login

    private func authenticate(_ tag: String, name: String, password: String) {
        awaitingAsync = true
        server.logins.checkPassword(password, for: name, from: address, isStillWanted: { [weak self] in self?.closeReason == nil }) {
            [self] result in
            switch result {
            case .success(let account): loggedIn(tag, account, tokenHash: nil)
            case .failure(let refusal): refuseLogin(tag, refusal, user: name)
            }
        }
    }

    private func loggedIn(_ tag: String, _ account: StoredUser, tokenHash: String?) {
        guard closeReason == nil else { return }
        user = account.name
        isAdmin = account.isAdmin
        passwordHash = account.passwordHash
        self.tokenHash = tokenHash
        framer.maxLineBytes = server.configuration.limits.maxLineBytes
        server.sessionLoggedIn(self)
        ServerLog.event("login", ["user": account.name, "address": address, "with": tokenHash.map { "token " + String($0.prefix(TokenInfo.idLength)) } ?? "password"])
        finishAsync(ResponseLine.ok(tag, "AUTH", account.name))
    }

    private func refuseLogin(_ tag: String, _ refusal: LoginGate.Refusal, user name: String?) {
        let error = switch refusal {
        case .failed: ProtocolError(.authFailed, "wrong user name, password or token")
        case .busy: ProtocolError(.busy, "too many logins are being checked; retry in a moment")
        case .rateLimited(let seconds): ProtocolError(.rateLimited, "too many failed logins; retry in \(seconds) s")
        }
        server.loginFailed()
        ServerLog.event("login_failed", ["user": name ?? "(token)", "address": address, "code": error.code.rawValue])
        finishAsync(ResponseLine.error(tag, error))
    }
}
