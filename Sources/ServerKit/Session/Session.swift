import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// One client connection's protocol state machine: framing, authentication, the ordered
/// execution of its requests, and its subscriptions. Bytes, the end of input, output drains
/// and commit outcomes come in through its input methods; everything it decides goes out as
/// `SessionAction`s (send, commit, subscribe, pause reading, close with a reason) through
/// `emit`, which `route`s the connection's part to its `SessionTransport` (a socket when serving, a buffer
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
/// server keeps one budget (`MemoryBudget`).
public final class Session {
    unowned let context: SessionContext
    let transport: SessionTransport
    /// Where each action the session decides on goes (`route`); a test may wrap it to watch them.
    var emit: (SessionAction) -> Void = { _ in }
    let address: String
    private var framer: LineFramer

    public internal(set) var user: String?
    var isAdmin = false
    /// The password hash the user logged in against, or the token's hash: when either is gone
    /// from the store (passwd, remove, revoke), so is this session.
    var passwordHash: String?
    var tokenHash: String?
    /// The front this connection is (the HTTP API sets `.http`; an agent says so in HELLO),
    /// recorded with every change it makes.
    public var front: ChangeFront = .line
    /// Who this connection's changes are by.
    var author: ChangeAuthor { ChangeAuthor(user: user ?? "-", tokenHash: tokenHash, via: front) }
    /// The password this session's PASSWD is storing: the store may hold it before the session
    /// hears its commit, and an account check meanwhile must not close the session for it.
    var nextPasswordHash: String?
    /// What to do with the answer of the password check in progress (PASSWD, REDEEM … AS).
    var onPasswordVerified: ((Result<StoredUser, LoginGate.Refusal>) -> Void)?
    /// What to do with the invitation the secret in check names (INVITE PEEK, REDEEM).
    var onInvitationChecked: ((Result<Invitation, LoginGate.Refusal>) -> Void)?
    /// The token a redemption in progress makes, for its reply.
    var redeemedToken: String?
    /// GRANT and USER changes on their way to the committer, in order.
    let administration = AdministrationQueue()
    var watchesCollections = false
    let subscriptions = SubscribedCollections()
    var isSubscribed: Bool { !subscriptions.isEmpty }

    private var inbox = FIFO<Pending>()
    private var inboxBytes = 0
    let replies = ReplyOrder()
    /// The barrier commit, read or login check later requests wait for, and the next page.
    let wait = SessionWait()
    let commits = CommitTickets()
    private var processing = false
    private var inputEnded = false
    private var readingPaused = false
    /// The server is shutting down: reading stopped for good.
    private var readingStopped = false
    public internal(set) var closeReason: CloseReason?
    /// When the last complete request line arrived (bytes of an unfinished line do not count).
    private(set) var lastActivity: UInt64
    let connectedAt: UInt64
    /// Whether a login answer is being worked out (the session is not idle before auth then).
    var isLoggingIn: Bool { wait.isWaiting && user == nil }

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
    /// Versions of a record VERSIONS lists at most (the newest).
    static let maxVersionsListed = 100
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

    var queueLimit: Int { user == nil ? Self.preAuthMaxQueuedRequests : Self.maxQueuedRequests }
    var queueByteLimit: Int { user == nil ? Self.preAuthMaxQueuedRequestBytes : Self.maxQueuedRequestBytes }
    var outputPause: Int { user == nil ? Self.preAuthPauseAtOutputBytes : Self.pauseAtOutputBytes }
    /// A line too long was found: what came before it is answered, then `* BYE TOO_LARGE`.
    private var lineTooLong = false

    enum Pending {
        case command(tag: String, Command, bytes: Int)
        case failure(LineParseError)

        var bytes: Int {
            if case .command(_, _, let bytes) = self { return bytes }
            return 0
        }
    }

    init(context: SessionContext, transport: SessionTransport) {
        self.context = context
        self.transport = transport
        address = transport.peerHost ?? "unknown"
        framer = LineFramer(maxLineBytes: context.configuration.preAuthMaxLineBytes)
        connectedAt = context.now
        lastActivity = connectedAt
        emit = { [unowned self] action in route(action) }
        transport.attach(self)
    }

    /// Hands the connection's part of an action to the transport, the rest to the server.
    func route(_ action: SessionAction) {
        switch action {
        case .connection(let part):
            switch part {
            case .send(let output): context.noteQueued(output.approximateBytes)
            case .deliver(let delivery): context.noteQueued(delivery.bytes.count)
            case .pauseReading, .resumeReading, .close, .closeNow: break
            }
            transport.carryOut(part)
        case .commit, .read, .checkPassword, .checkToken, .verifyPassword, .hashPassword, .checkInvitation, .announce, .subscribe, .unsubscribe:
            context.carryOut(action, for: self)
        }
    }

    /// Hands `operation` to the committer; `handler` gets its outcome.
    func commit(_ operation: StoreOperation, then handler: @escaping (Result<StoreOutcome, StoreFailure>) -> Void) {
        emit(.commit(operation, ticket: commits.issue(handler)))
    }

    /// A commit's outcome, also after the session closed (quota reservations end with it).
    func commitAnswered(_ ticket: Int, _ result: Result<StoreOutcome, StoreFailure>) {
        commits.complete(ticket, result)
    }

    /// Bytes sent and not yet taken by the client.
    var pendingOutputBytes: Int { transport.pendingOutputBytes }
    /// Bytes this connection holds: output not yet taken, requests read and not yet done (the
    /// session's and the connection's own).
    var bufferedBytes: Int { transport.pendingOutputBytes + transport.heldInputBytes + inboxBytes + framer.bufferedByteCount }

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
    public func outputDrained() {
        resumeReadingIfPaused()
        processInbox()
    }

    /// The connection is gone, after `close`: the server forgets the session.
    public func closed() {
        context.sessionGone(self)
    }

    /// Stops reading for good (the server is shutting down); what was asked is still answered.
    func stopReading() {
        guard !readingStopped else { return }
        readingStopped = true
        emit(.connection(.pauseReading))
    }

    /// Ends the connection at once, sent or not (a client that does not read at shutdown).
    func abort() {
        emit(.connection(.closeNow))
    }

    /// A request handed over as a value (the HTTP API's): it waits its turn in the inbox as a
    /// parsed line would, under the same rules (login, order, bounds), with no line framing.
    public func received(_ command: Command, tag: String, bytes: Int) {
        guard closeReason == nil else { return }
        lastActivity = context.now
        inbox.append(.command(tag: tag, command, bytes: bytes))
        inboxBytes += bytes
        processInbox()
    }

    /// Logged in: a line may be as long as the protocol allows.
    func allowFullLengthLines() {
        framer.maxLineBytes = context.configuration.limits.maxLineBytes
    }

    func received(_ bytes: [UInt8]) {
        guard closeReason == nil else { return }
        framer.append(bytes)
        if bytes.contains(0x0A) { lastActivity = context.now }
        processInbox()
    }

    /// Parses waiting lines into the inbox while it has room: the rest stay as bytes in the
    /// framer (far smaller than parsed requests) until their turn comes.
    func takeLines() {
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

    func processInbox() {
        // Replies filled during this pass call back in here; the running pass continues for them.
        guard !processing, closeReason == nil else { return }
        processing = true
        defer { processing = false }
        requests: while closeReason == nil {
            if wait.nextPage != nil {
                guard !wait.isWaiting, transport.pendingOutputBytes <= outputPause, let next = wait.takePage() else { break }
                switch next {
                case .replay(let tag, let collection, let since): replayPage(tag, collection, since: since)
                case .listing(let tag, let collection, let handle, let listed): listingPage(tag, collection, handle, listed: listed)
                }
                continue
            }
            takeLines()
            guard !wait.isWaiting, let next = inbox.first else { break }
            // Replies the client has not read yet: start nothing more until it reads (onDrain).
            guard transport.pendingOutputBytes <= outputPause else { break }
            let slotsEmpty = replies.isEmpty
            switch next {
            case .failure(.untagged(let error)):
                guard slotsEmpty else { break requests }
                send(.error(tag: nil, error))
            case .failure(.tagged(let tag, let error)):
                guard slotsEmpty else { break requests }
                send(.error(tag: tag, error))
            case .command(let tag, let command, let bytes):
                if command.isRecordWrite || command.isPipelinedAdministration, user != nil {
                    guard replies.writesInFlight < Self.maxWritesInFlight,
                        replies.bytesInFlight < Self.maxWriteBytesInFlight
                    else { break requests }
                    // A write is checked against roles the changes before it may still alter.
                    if command.isRecordWrite, !administration.isEmpty { break requests }
                    guard context.commitQueueHasRoom else {
                        context.waitForCommitRoom(self)
                        break requests
                    }
                    if command.isRecordWrite {
                        submitWrite(tag, command, bytes: bytes)
                    } else {
                        submitAdministration(tag, command, bytes: bytes)
                    }
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
                if preAuthRequests >= Self.preAuthMaxRequests { sayGoodbye(.authRequired) }
            }
        }
        if lineTooLong, inbox.isEmpty {
            sayGoodbye(.lineTooLong)
            return
        }
        applyBackpressure()
        closeIfInputDone()
    }

    func closeIfInputDone() {
        if inputEnded, inbox.isEmpty, !framer.hasCompleteLine, replies.isEmpty, !wait.isWaiting, wait.nextPage == nil {
            close(.eof)
        }
    }

    /// The inbox is full only while lines wait in the framer too, so reading pauses then;
    /// once it is half empty the framer holds no whole line, and reading resumes.
    var mustPauseReading: Bool {
        inbox.count >= queueLimit || inboxBytes >= queueByteLimit || transport.pendingOutputBytes > outputPause
    }

    func applyBackpressure() {
        if !readingPaused, mustPauseReading {
            readingPaused = true
            emit(.connection(.pauseReading))
        } else if readingPaused {
            resumeReadingIfPaused()
        }
    }

    func resumeReadingIfPaused() {
        guard readingPaused, closeReason == nil, !inputEnded, !readingStopped else { return }
        if inbox.count <= queueLimit / 2, inboxBytes <= queueByteLimit / 2, transport.pendingOutputBytes <= outputPause / 2 {
            readingPaused = false
            emit(.connection(.resumeReading))
        }
    }

    /// Called by the server when the committer has room again after this session waited.
    func commitRoomAvailable() {
        processInbox()
    }
}
