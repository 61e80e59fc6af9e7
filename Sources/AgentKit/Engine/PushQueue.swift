/// The engine's pushes: records whose write is unanswered, waiting for a retry (with its
/// doubling delay), refused by the server, or holding a file a change from the server could
/// not be written over. Keyed by `RecordKey`; what to push is the engine's to decide.
final class PushQueue {
    private var inFlight: Set<RecordKey> = []
    /// Hash of a file the server refused (FORBIDDEN, TOO_LARGE): not retried until it changes.
    private var refused: [RecordKey: String] = [:]
    /// Hash of a file a change from the server could not be written over (a full disk): not
    /// pushed (the server would answer CONFLICT with that change, and the same write would fail
    /// in a loop) until it changes or a change for it is applied.
    private var unwritten: [RecordKey: String] = [:]
    /// Pushes refused for now (a full disk on the server), each tried again after its delay.
    private var retrying: Set<RecordKey> = []
    private var retryDelay: [RecordKey: UInt64] = [:]

    static let firstRetryMilliseconds: UInt64 = 1_000
    static let lastRetryMilliseconds: UInt64 = 60_000

    /// Pushes not answered yet or waiting for a retry (for `status`).
    var pendingCount: Int { inFlight.count + retrying.count }

    func isInFlight(_ key: RecordKey) -> Bool {
        inFlight.contains(key)
    }

    /// Whether a push of the record is unanswered or waits for a retry (no other may start).
    func isBusy(_ key: RecordKey) -> Bool {
        inFlight.contains(key) || retrying.contains(key)
    }

    func sent(_ key: RecordKey) {
        inFlight.insert(key)
    }

    func answered(_ key: RecordKey) {
        inFlight.remove(key)
    }

    /// The connection is gone: no push in flight will be answered.
    func connectionLost() {
        inFlight.removeAll()
    }

    func succeeded(_ key: RecordKey) {
        refused[key] = nil
        retryDelay[key] = nil
    }

    /// Starts waiting to retry a push refused for now; the delay doubles each time, from
    /// `firstRetryMilliseconds` up to `lastRetryMilliseconds`.
    func retryDelayStarting(_ key: RecordKey) -> UInt64 {
        let delay = min((retryDelay[key] ?? Self.firstRetryMilliseconds / 2) * 2, Self.lastRetryMilliseconds)
        retryDelay[key] = delay
        retrying.insert(key)
        return delay
    }

    func retryDue(_ key: RecordKey) {
        retrying.remove(key)
    }

    // MARK: Refused and unwritten files

    func refusedHash(_ key: RecordKey) -> String? {
        refused[key]
    }

    func refuse(_ key: RecordKey, hash: String?) {
        refused[key] = hash
    }

    func unwrittenHash(_ key: RecordKey) -> String? {
        unwritten[key]
    }

    func noteUnwritten(_ key: RecordKey, hash: String?) {
        unwritten[key] = hash
    }
}
