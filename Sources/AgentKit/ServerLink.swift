import EventLoop
import Foundation
import SyncClient
import SyncCore
import SyncProtocol

/// The agent's connection to the server: connects, says HELLO, logs in, keeps alive with PING,
/// and reconnects with exponential backoff and full jitter when the connection is lost.
///
/// Requests go out on a `ClientConnection` with their reply callback; untagged lines go to
/// the listener as `LinkNotice.event`. Loop-thread object.
final class ServerLink: ServerRequests {
    private let loop: EventLoop
    private let configuration: AgentConfiguration
    private var connection: ClientConnection?
    private var attempts = 0
    /// Which of the configured servers is in use, and how many failed in a row since one worked.
    private var serverIndex = 0
    private var failedServers = 0
    /// The server this link connects (or is connected) to.
    var server: SocketAddress { configuration.servers[serverIndex] }
    private var reconnectTimer: LoopTimer?
    private var keepalive: LoopTimer?
    private var stopped = false

    /// Told what happens on the connection (given at init).
    private unowned let listener: any LinkListener

    private func log(_ line: String) {
        listener.link(.log(line))
    }
    private(set) var isReady = false
    /// Why the last attempt failed, for `status`. A new reason is logged once and the status
    /// rewritten (`LinkNotice.errorChanged`): a refused certificate must not hide behind an older error.
    private(set) var lastError: String? {
        didSet {
            guard lastError != oldValue else { return }
            if let lastError, lastError != loggedError { log(lastError) }
            loggedError = lastError ?? loggedError
            listener.link(.errorChanged)
        }
    }
    private var loggedError: String?
    /// The server's limits from HELLO (the defaults until it says otherwise): a record or line
    /// over them is never sent, since the server would answer with BYE TOO_LARGE.
    private(set) var maxRecordBytes = Limits.standard.maxRecordBytes
    private(set) var maxLineBytes = Limits.standard.maxLineBytes
    private var readySince: UInt64 = 0
    /// A session that ends sooner than this after login does not reset the reconnect backoff,
    /// so a failure that follows every login is retried ever more slowly, not in a tight loop.
    static let stableSessionMilliseconds: UInt64 = 10_000

    /// How this link logs in: the configured credential, or a newer one from its file.
    private var credential: AgentConfiguration.Credential
    /// The server refused the credential: no retries until its file changes.
    private(set) var credentialRefused = false
    private var credentialWatch: LoopTimer?
    static let credentialPollMilliseconds: UInt64 = 1_000

    init(loop: EventLoop, configuration: AgentConfiguration, listener: any LinkListener) {
        self.listener = listener
        self.loop = loop
        self.configuration = configuration
        credential = configuration.credential
    }

    func start() {
        stopped = false
        connect()
    }

    /// Closes the connection and stops reconnecting.
    func stop() {
        stopped = true
        reconnectTimer?.close()
        reconnectTimer = nil
        credentialWatch?.close()
        credentialWatch = nil
        keepalive?.close()
        keepalive = nil
        connection?.quit()
        connection = nil
    }

    /// Drops the connection and connects again at once (after a collection was renamed, so
    /// every subscription starts over under its new name).
    func restart() {
        attempts = 0
        connection?.close()
    }

    /// Sends `request` (without tag); `reply` gets the tagged answer. Dropped when not connected.
    func send(_ command: Command, reply: @escaping (ServerEvent) -> Void) {
        guard let connection, isReady || command.allowedBeforeAuth else { return }
        if Self.tracing { log("-> \(command.requestText.prefix(300))") }
        connection.send(command) { [self] line in
            if Self.tracing { log("<- \(String(decoding: line.bytes.prefix(300), as: UTF8.self))") }
            reply(line.reply)
        }
    }

    /// `PLISTSYNC_TRACE=1` logs every request and every line from the server (for debugging).
    static let tracing = ProcessInfo.processInfo.environment["PLISTSYNC_TRACE"] == "1"

    private func connect() {
        guard !stopped, connection == nil else { return }
        let server = self.server
        ClientConnection.connect(on: loop, to: server, tls: configuration.tls) { [self] result in
            switch result {
            case .failure(let failure):
                lastError = failure.description
                tryNextServer()
            case .success(let client):
                guard !stopped else { return client.close() }
                attach(client)
            }
        }
    }

    private func attach(_ client: ClientConnection) {
        connection = client
        client.onBatch = { [self] starting in listener.link(.batch(starting: starting)) }
        client.onUntagged = { [self] line in untagged(line) }
        client.onClosed = { [self] failure in
            // A refused certificate or handshake is the reason the user needs to see.
            if let failure, failure.hasPrefix("TLS") { lastError = failure }
            lost(client)
        }
        client.logIn(client: ChangeFront.agentClientName, with: credential.login(user: configuration.user), onHello: { [self] event in
            guard case .ok(_, let reply, let limits?) = event else { return }
            if case .hello(_, let serverID) = reply {
                let restoredSeq: Int64? = if case .integer(let seq)? = limits["restored_seq"] { seq } else { nil }
                listener.link(.serverID(serverID, restoredSeq: restoredSeq))
            }
            if case .integer(let value)? = limits["max_record_bytes"], value > 0 { maxRecordBytes = Int(value) }
            if case .integer(let value)? = limits["max_line_bytes"], value > 0 { maxLineBytes = Int(value) }
        }) { [self] event in
            guard case .ok = event else {
                if case .error(_, let code, let message, _) = event {
                    lastError = "login refused: \(code) \(message)"
                    if code == .authFailed { refuseCredential() }
                }
                if lastError == nil { log("login refused") }
                client.close()
                return
            }
            lastError = nil
            isReady = true
            failedServers = 0
            readySince = loop.nowMilliseconds
            startKeepalive()
            log("connected to \(server) as \(configuration.user)")
            listener.link(.ready)
        }
    }

    private func untagged(_ line: ReceivedLine) {
        if Self.tracing { log("<- \(String(decoding: line.bytes.prefix(300), as: UTF8.self))") }
        guard let event = line.event else {
            return log("unreadable line from the server: \(String(decoding: line.bytes.prefix(200), as: UTF8.self))")
        }
        if case .bye(let reason) = event {
            log("server closed the connection: \(reason)")
            if reason == .revoked { refuseCredential() }
        }
        listener.link(.event(event))
    }

    private func lost(_ client: ClientConnection) {
        guard connection === client else { return }
        connection = nil
        keepalive?.close()
        keepalive = nil
        let wasReady = isReady
        isReady = false
        if wasReady, loop.nowMilliseconds - readySince >= Self.stableSessionMilliseconds { attempts = 0 }
        if wasReady {
            log("disconnected from \(server)")
            listener.link(.lost)
        }
        if !credentialRefused { scheduleReconnect() }
    }

    /// The server said this credential is no good (revoked, unknown, password changed):
    /// retrying would only be refused again. With its file known, the agent waits for a new
    /// one there (`plistsync login` writes it) and then connects at once.
    private func refuseCredential() {
        let what = if case .token = credential { "token" } else { "password" }
        guard let file = configuration.credentialFile else {
            // Nothing to wait for: keep retrying, slowly (the backoff is at its ceiling).
            attempts = max(attempts, 9)
            return
        }
        credentialRefused = true
        lastError = "the server refused this device's \(what) (revoked or changed); stopped retrying: "
            + (what == "token" ? "run `plistsync login` on this machine" : "update \(file)") + ", the agent picks it up by itself"
        guard credentialWatch == nil else { return }
        let refused = currentSecret
        let timer = LoopTimer(loop: loop)
        credentialWatch = timer
        timer.start(after: Self.credentialPollMilliseconds, repeatEvery: Self.credentialPollMilliseconds) { [self] in
            guard let line = Self.firstLine(of: file), line != refused else { return }
            credential = if case .token = credential { .token(line) } else { .password(line) }
            credentialWatch?.close()
            credentialWatch = nil
            credentialRefused = false
            attempts = 0
            log("\(file) changed; logging in again")
            connect()
        }
    }

    private var currentSecret: String {
        switch credential {
        case .token(let token): token
        case .password(let password): password
        }
    }

    private static func firstLine(of path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return line.isEmpty ? nil : line
    }

    /// This server cannot be reached: the next one is tried at once, until each has failed
    /// once; then the usual backoff.
    private func tryNextServer() {
        let count = configuration.servers.count
        failedServers += 1
        serverIndex = (serverIndex + 1) % count
        guard count > 1, failedServers < count, !stopped, reconnectTimer == nil else {
            failedServers = 0
            return scheduleReconnect()
        }
        log("\(lastError ?? "cannot connect"); trying \(server)")
        reconnectTimer = LoopTimer.once(on: loop, after: 20) { [self] in
            reconnectTimer = nil
            connect()
        }
    }

    private func scheduleReconnect() {
        guard !stopped, reconnectTimer == nil else { return }
        attempts += 1
        let ceiling = min(30_000, 100 << min(attempts, 9))
        let delay = UInt64(max(50, Int.random(in: 0...ceiling)))
        let timer = LoopTimer(loop: loop)
        reconnectTimer = timer
        timer.start(after: delay) { [self] in
            timer.close()
            reconnectTimer = nil
            connect()
        }
    }

    private func startKeepalive() {
        let timer = LoopTimer(loop: loop)
        keepalive = timer
        let period = configuration.keepaliveSeconds * 1000
        timer.start(after: period, repeatEvery: period) { [self] in
            if let connection, loop.nowMilliseconds - connection.lastHeard > 3 * period {
                log("no answer from the server for \(3 * period / 1000) s; reconnecting")
                connection.close()
                return
            }
            send(.ping)
        }
    }
}

/// What happens on the agent's server connection, as told to its `LinkListener`.
enum LinkNotice {
    /// The server's store id from HELLO, before login completes.
    case serverID(String, restoredSeq: Int64?)
    /// Logged in (once per connection).
    case ready
    /// A ready connection was lost.
    case lost
    /// An untagged line: a change, a collection, BYE.
    case event(ServerEvent)
    /// Before and after each batch of received lines, so their effects can share a transaction.
    case batch(starting: Bool)
    /// `lastError` changed (the status shows it).
    case errorChanged
    /// A line for the operator.
    case log(String)
}

/// Hears what happens on a `ServerLink`; given to it at init.
protocol LinkListener: AnyObject {
    func link(_ notice: LinkNotice)
}
