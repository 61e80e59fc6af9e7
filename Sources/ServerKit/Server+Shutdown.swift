import EventLoop
import Foundation
import SyncCore
import SyncProtocol
import TLSKit

/// SIGTERM and SIGINT: stop accepting, let in-flight commits answer, say `* BYE SHUTDOWN`.
extension Server {
    /// Stops accepting, lets in-flight commits finish and answer, says `* BYE SHUTDOWN` to every
    /// client, and lets the loop end.
    public func shutdown() {
        guard handles.stopAccepting() else { return }
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
            handles.graceStarted(LoopTimer.once(on: loop, after: configuration.shutdownGraceSeconds * 1000) { [unowned self] in
                handles.graceEnded()
                for session in sessions.values { session.abort() }
            })
        }
    }

    func closeHandles() {
        logins.close()
        reads.close()
        store.cluster?.stopListening()
        handles.closeAll()
    }
}
