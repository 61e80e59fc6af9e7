import SyncProtocol

/// What the server tells about itself: the STATS reply and the figures `GET /metrics` serves.
extension ServerCore {
    /// The figures of `GET /metrics` (Prometheus text format).
    func metricsText() -> String {
        var metrics = MetricsText()
        var pending = 0
        var pendingMax = 0
        for session in sessions.values {
            let bytes = session.pendingOutputBytes
            pending += bytes
            pendingMax = max(pendingMax, bytes)
        }
        metrics.add("plistsync_connections", "gauge", "Open client connections.", Double(sessions.count))
        metrics.add("plistsync_subscriptions", "gauge", "Live collection subscriptions.", Double(hub.subscriptionCount))
        metrics.add("plistsync_changes_total", "counter", "Changes committed since start.", Double(counters.changesTotal))
        metrics.add("plistsync_commits_total", "counter", "Group commits (transactions) since start.", Double(committer.batches))
        metrics.add("plistsync_queued_writes", "gauge", "Writes waiting for the next group commit.", Double(committer.queuedCount))
        metrics.add("plistsync_seq", "gauge", "Sequence number of the last change broadcast.", Double(hub.lastBroadcastSeq))
        metrics.add("plistsync_fanout_pending_bytes", "gauge", "Bytes of broadcasts and replies not yet taken by clients, all connections.", Double(pending))
        metrics.add("plistsync_fanout_pending_bytes_max", "gauge", "The most any one connection has not taken yet (the slowest subscriber's lag).", Double(pendingMax))
        metrics.add("plistsync_shed_connections_total", "counter", "Connections closed to keep buffered bytes within --max-buffered-bytes.", Double(memoryBudget.shedTotal))
        metrics.add("plistsync_logins_total", "counter", "Logins since start.", Double(counters.loginsSucceeded), labels: "result=\"ok\"")
        metrics.add("plistsync_logins_total", "counter", "Logins since start.", Double(counters.loginsFailed), labels: "result=\"failed\"")
        metrics.add("plistsync_collections", "gauge", "Collections.", Double(directory.collections.count))
        metrics.add("plistsync_store_bytes", "gauge", "Size of the store on disk, WAL included.", Double(space.bytes))
        metrics.add("plistsync_uptime_seconds", "gauge", "Seconds since the server started.", Double((clock.milliseconds - startedAt) / 1000))
        return metrics.text
    }

    /// The STATS reply's JSON.
    func statsJSON() -> String {
        let now = clock.milliseconds
        let rate = counters.changesPerSecond(now: now)
        return ValueJSON.encode(.dictionary([
            "connections": .integer(Int64(sessions.count)),
            "subscribers": .integer(Int64(hub.subscriptionCount)),
            "seq": .integer(hub.lastBroadcastSeq),
            "changes_per_second": .real(rate),
            "uptime_seconds": .integer(Int64((now - startedAt) / 1000)),
            "store_bytes": .integer(space.bytes),
            "collections": .integer(Int64(directory.collections.count)),
            "commits": .integer(Int64(committer.batches)),
            "queued_writes": .integer(Int64(committer.queuedCount)),
        ]))
    }
}

/// Lines of the Prometheus text format.
struct MetricsText {
    private(set) var text = ""
    /// Series whose HELP and TYPE lines are written (once each, before the first sample).
    private var described: Set<String> = []

    mutating func add(_ name: String, _ kind: String, _ help: String, _ value: Double, labels: String = "") {
        if described.insert(name).inserted {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind)\n"
        }
        let number = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        text += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(number)\n"
    }
}
