import ServerKit
import SyncCore
import SyncProtocol

/// The HTTP API's way into a `Session`: a request goes in as a `Command` value and what the
/// session sends comes back as `ServerOutput` values, so the API follows exactly the rules the
/// line protocol does (roles, revisions, quotas, login pacing, budgets) with no request text
/// written and no reply text read. One bridge a session; an HTTP connection whose requests
/// change credentials detaches its bridge and opens another.
final class SessionBridge: SessionTransport {
    /// How a request ended: the session's reply, or the session's end before it came.
    enum Answer {
        case ok(Reply, payload: String?)
        case refused(ProtocolError)
        /// A stale write: the record's current state (nil: it never existed).
        case conflict(collection: String, id: String, current: RecordState?)
        /// The session closed first (revoked, shed, shutting down, idle) for this reason.
        case closed(CloseReason)
    }

    /// A request waiting for its answer; replies come in request order.
    private struct Request {
        let tag: String
        /// The untagged notices that belong to this request's reply (a listing's lines).
        let collects: (ServerNotice) -> Bool
        let onNotice: (ServerNotice) -> Void
        let onChanges: ([Change]) -> Void
        let then: (Answer) -> Void
    }

    /// Where the session's end and its other output go; nil once detached.
    weak var owner: HTTPConnection?
    private(set) var session: Session?
    /// Why the session ended; nil while it runs.
    private(set) var endReason: CloseReason?
    /// The token the session logged in with (nil: not logged in, or by password).
    var token: String?
    var isLoggedIn: Bool { endReason == nil && session?.user != nil }
    private var nextTag = 0
    private var waiting = FIFO<Request>()

    let peerHost: String?

    init(owner: HTTPConnection) {
        self.owner = owner
        peerHost = owner.peerHost
    }

    var pendingOutputBytes: Int { owner?.pendingOutputBytes ?? 0 }
    var heldInputBytes: Int { owner?.heldInputBytes ?? 0 }

    func attach(_ session: Session) {
        self.session = session
    }

    /// Runs `command` in the session; `then` gets its answer (possibly before this returns).
    /// `collecting` picks the untagged notices that are part of the reply (a listing's lines),
    /// handed to `onNotice` in order; a SUB's replayed changes go to `onChanges`.
    func request(
        _ command: Command, bytes: Int = 64, collecting collects: @escaping (ServerNotice) -> Bool = { _ in false },
        onNotice: @escaping (ServerNotice) -> Void = { _ in }, onChanges: @escaping ([Change]) -> Void = { _ in },
        then: @escaping (Answer) -> Void
    ) {
        guard let session, endReason == nil else { return then(.closed(endReason ?? .eof)) }
        do {
            try CommandParser.validate(command)
        } catch {
            return then(.refused(error))
        }
        nextTag += 1
        let tag = "h\(nextTag)"
        waiting.append(Request(tag: tag, collects: collects, onNotice: onNotice, onChanges: onChanges, then: then))
        session.received(command, tag: tag, bytes: bytes)
    }

    func carryOut(_ action: ConnectionAction) {
        switch action {
        case .send(let output): route(output)
        case .deliver(let delivery): owner?.deliver(delivery)
        case .close(let reason): end(reason, immediately: reason == .socketError)
        case .closeNow: end(endReason ?? .shutdown, immediately: true)
        case .pauseReading, .resumeReading: break
        }
    }

    /// Ends the session without a word to the client (the connection's requests now log in as
    /// someone else). Its connection stays, so the session is gone at once.
    func detach() {
        owner = nil
        waiting = FIFO()
        forgetSession()?.closed()
    }

    /// The connection is closed: the session (which counted its bytes until now) is gone.
    func connectionClosed() {
        owner = nil
        guard let session = forgetSession() else { return }
        failWaiting(endReason ?? .eof)
        session.closed()
    }

    /// Ends the session (EOF, unless it ended already) and lets go of it; it is gone for the
    /// server once `closed()` is called on what this returns.
    @discardableResult
    private func forgetSession() -> Session? {
        guard let session else { return nil }
        self.session = nil
        if session.closeReason == nil { session.close(.eof) }
        return session
    }

    private func end(_ reason: CloseReason, immediately: Bool) {
        if endReason == nil {
            endReason = reason
            failWaiting(reason)
        }
        owner?.sessionEnded(immediately: immediately)
    }

    /// The requests still waiting are answered with the session's end.
    private func failWaiting(_ reason: CloseReason) {
        let pending = waiting
        waiting = FIFO()
        pending.forEach { $0.then(.closed(reason)) }
    }

    private func route(_ output: ServerOutput) {
        switch output {
        case .ok(let tag, let reply, let payload): answer(tag, .ok(reply, payload: payload))
        case .error(let tag?, let error): answer(tag, .refused(error))
        case .conflict(let tag, let collection, let id, let current): answer(tag, .conflict(collection: collection, id: id, current: current))
        case .error(nil, _): break  // an unreadable line: none is sent here
        case .notices(let notices):
            for notice in notices {
                if let request = waiting.first, request.collects(notice) {
                    request.onNotice(notice)
                } else {
                    owner?.notice(notice)
                }
            }
        case .changes(let changes):
            waiting.first?.onChanges(changes)
        case .lines:
            break  // a line connection's: an HTTP session never asks for them (`takesEncodedLines`)
        }
    }

    private func answer(_ tag: String, _ answer: Answer) {
        guard waiting.first?.tag == tag, let request = waiting.popFirst() else { return }
        request.then(answer)
    }
}
