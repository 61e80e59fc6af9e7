import EventLoop

/// What the server process holds open around its core: the listeners (protocol, plaintext,
/// metrics, HTTP), the signal and control-folder watchers; closed in two steps
/// (`stopAccepting` as shutdown begins, `closeAll` once the core has stopped).
final class ServerHandles {
    private(set) var listener: TCPListener?
    private(set) var plaintextListener: TCPListener?
    private(set) var metrics: MetricsEndpoint?
    /// The HTTP API and console (`--http-listen`).
    private(set) var http: (any ServerFront)?
    private var signalWatchers: [SignalWatcher] = []
    private var controlWatcher: FolderWatcher?

    func listening(_ listener: TCPListener, plaintext: TCPListener?, metrics: MetricsEndpoint?, http: (any ServerFront)?) {
        self.listener = listener
        plaintextListener = plaintext
        self.metrics = metrics
        self.http = http
    }

    func running(signals: [SignalWatcher], controlWatcher: FolderWatcher?) {
        signalWatchers = signals
        self.controlWatcher = controlWatcher
    }

    /// Shutdown begins: no listener accepts any more.
    func stopAccepting() {
        listener?.close()
        listener = nil
        plaintextListener?.close()
        plaintextListener = nil
        metrics?.close()
        metrics = nil
        http?.close()
    }

    /// Closes the watchers (the core has stopped).
    func closeAll() {
        controlWatcher?.close()
        controlWatcher = nil
        for watcher in signalWatchers { watcher.close() }
        signalWatchers.removeAll()
    }
}
