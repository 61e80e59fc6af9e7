import SyncProtocol

/// The line protocol from inside the server: an HTTP connection's requests go into a
/// `Session` as request lines, and the session's reply lines come back parsed, so the HTTP API
/// follows exactly the rules the line protocol does (roles, revisions, quotas, login pacing,
/// budgets). One bridge a session; an HTTP connection whose requests change credentials
/// detaches its bridge and opens another.
final class LineBridge: SessionTransport {
    /// Where the session's end and its untagged lines go; nil once detached.
    weak var owner: HTTPConnection?
    private(set) var session: Session?
    /// The token the session logged in with (nil: not logged in, or by password).
    var token: String?
    var isLoggedIn: Bool { session?.user != nil }
    private var nextTag = 0
    private var waiting: Request?
    /// Lines sent and not yet split (a send may carry several lines, or part of one never).
    private var partial: [UInt8] = []
    private var routing = false
    private static let changePrefix = Array("* CHANGE ".utf8)

    /// A request in progress: the untagged kinds that belong to its reply, what to do with
    /// each of them, and with its tagged reply.
    private struct Request {
        let tag: String
        let listed: Set<String>
        let onLine: (ServerLine) -> Void
        let onReply: (ServerLine) -> Void
    }

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

    /// Sends `line` (a request without its tag) into the session; every value a client sent is
    /// in it as `ResponseLine.argument` writes it (an atom, else a JSON string), so none can end
    /// the line or add an argument. `onLine` gets each untagged
    /// line of a kind in `listed` until the tagged reply, which goes to `onReply` (possibly
    /// before this returns).
    func request(_ line: String, listing listed: Set<String> = [], onLine: @escaping (ServerLine) -> Void = { _ in }, onReply: @escaping (ServerLine) -> Void) {
        guard let session, session.closeReason == nil else {
            return onReply(ServerLine(tag: nil, words: ["ERR", ErrorCode.busy.rawValue, "the connection is closing"], payload: nil))
        }
        nextTag += 1
        let tag = "h\(nextTag)"
        waiting = Request(tag: tag, listed: listed, onLine: onLine, onReply: onReply)
        session.received(Array("\(tag) \(line)\n".utf8))
    }

    func perform(_ action: SessionAction) {
        switch action {
        case .send(let text): take(text.utf8)
        case .sendBytes(let bytes):
            // A broadcast's change lines go to the stream as they came, whole: every subscriber
            // gets the same lines, made into events once for all.
            if partial.isEmpty, !routing, waiting == nil, let owner, owner.stream != nil, bytes.starts(with: Self.changePrefix), bytes.last == 0x0A {
                owner.changeLines(bytes)
            } else {
                take(bytes)
            }
        case .close(let reason):
            end(immediately: reason == .socketError)
        case .closeNow:
            end(immediately: true)
        case .pauseReading, .resumeReading, .commit, .read, .checkPassword, .checkToken, .announce, .subscribe, .unsubscribe:
            break
        }
    }

    /// Ends the session without a word to the client (the HTTP connection closed, or its
    /// requests now log in as someone else).
    func detach() {
        owner = nil
        waiting = nil
        session?.close(.eof)
    }

    private func end(immediately: Bool) {
        guard let session else { return }
        self.session = nil
        let owner = owner
        self.owner = nil
        let pending = waiting
        waiting = nil
        owner?.sessionEnded(immediately: immediately)
        pending?.onReply(ServerLine(tag: pending?.tag, words: ["ERR", ErrorCode.busy.rawValue, "the connection is closing"], payload: nil))
        session.closed()
    }

    private func take(_ bytes: some Collection<UInt8>) {
        partial.append(contentsOf: bytes)
        // A reply's handler may send the next request, whose reply comes back in here at
        // once: lines are routed by the outermost call only, in order.
        guard !routing else { return }
        routing = true
        defer { routing = false }
        var start = 0
        while let newline = partial[start...].firstIndex(of: 0x0A) {
            let line = partial[start..<newline]
            start = newline + 1
            route(line)
        }
        partial.removeSubrange(..<start)
    }

    private func route(_ bytes: ArraySlice<UInt8>) {
        guard let line = ServerLine.parseAnsweringTag(bytes, keepingPayloadText: true) else { return }
        if let tag = line.tag {
            guard let pending = waiting, pending.tag == tag else { return }
            waiting = nil
            pending.onReply(line)
        } else if let pending = waiting, let kind = line.words.first, pending.listed.contains(kind) {
            pending.onLine(line)
        } else {
            owner?.untagged(line)
        }
    }
}
