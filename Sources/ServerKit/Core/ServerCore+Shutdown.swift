/// Shutting down: stop reading, let in-flight commits answer, say `* BYE SHUTDOWN`.
extension ServerCore {
    /// Stops reading requests, lets in-flight commits finish and answer, says `* BYE SHUTDOWN`
    /// to every client, and once they are gone calls `onStopped`.
    public func shutdown() {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        ServerLog.info("shutting down")
        for session in sessions.values { session.stopReading() }
        if committer.isIdle { finishShutdown() }
    }

    func finishShutdown() {
        for session in sessions.values { session.sayGoodbye(.shutdown) }
        if sessions.isEmpty {
            closeHandles()
        } else {
            // Clients that do not read their last bytes are cut off after a grace period.
            graceCall = clock.after(configuration.shutdownGraceSeconds * 1000) { [unowned self] in
                graceCall = nil
                for session in sessions.values { session.abort() }
            }
        }
    }

    func closeHandles() {
        logins.close()
        reads.close()
        store.cluster?.stopListening()
        graceCall?.cancel()
        graceCall = nil
        stopHousekeeping()
        let stopped = onStopped
        onStopped = nil
        stopped?()
    }
}
