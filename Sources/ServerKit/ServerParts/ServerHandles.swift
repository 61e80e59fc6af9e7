import EventLoop

/// What a running server holds open besides its sessions: the listeners (protocol, plaintext,
/// metrics, HTTP), the housekeeping timer, the signal and control-folder watchers, and during
/// shutdown the grace timer; closed in two steps (`stopAccepting`, then `closeAll`).
final class ServerHandles {
    private(set) var listener: TCPListener?
    private(set) var plaintextListener: TCPListener?
    private(set) var metrics: MetricsEndpoint?
    /// The HTTP API and console (`--http-listen`), or one made for tests without a listener.
    private(set) var http: HTTPFront?
    private var housekeeping: LoopTimer?
    private var signalWatchers: [SignalWatcher] = []
    private var controlWatcher: FolderWatcher?
    private var graceTimer: LoopTimer?
    private var onStopped: (() -> Void)?
    private(set) var isShuttingDown = false

    func listening(_ listener: TCPListener, plaintext: TCPListener?, metrics: MetricsEndpoint?, http: HTTPFront?) {
        self.listener = listener
        plaintextListener = plaintext
        self.metrics = metrics
        self.http = http
    }

    /// The HTTP front for connections served without a listener (tests), made at the first.
    func httpFront(_ make: () -> HTTPFront?) -> HTTPFront? {
        if http == nil { http = make() }
        return http
    }

    func running(housekeeping: LoopTimer, signals: [SignalWatcher], controlWatcher: FolderWatcher?, onStopped: @escaping () -> Void) {
        self.housekeeping = housekeeping
        signalWatchers = signals
        self.controlWatcher = controlWatcher
        self.onStopped = onStopped
    }

    /// Shutdown begins: no listener accepts any more. False when it had begun already.
    func stopAccepting() -> Bool {
        guard !isShuttingDown else { return false }
        isShuttingDown = true
        listener?.close()
        listener = nil
        plaintextListener?.close()
        plaintextListener = nil
        metrics?.close()
        metrics = nil
        http?.close()
        return true
    }

    /// Clients that do not read their last bytes are cut off when `timer` fires.
    func graceStarted(_ timer: LoopTimer) {
        graceTimer = timer
    }

    func graceEnded() {
        graceTimer = nil
    }

    /// Closes the rest and says the server stopped.
    func closeAll() {
        controlWatcher?.close()
        controlWatcher = nil
        graceTimer?.close()
        graceTimer = nil
        housekeeping?.close()
        housekeeping = nil
        for watcher in signalWatchers { watcher.close() }
        signalWatchers.removeAll()
        onStopped?()
        onStopped = nil
    }
}
