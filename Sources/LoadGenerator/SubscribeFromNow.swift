import SyncClient
import SyncCore

extension ClientConnection {
    /// Subscribes to `collection` from the seq it is at now (a one-record LIST says which), so
    /// only changes made from here on arrive; `then` gets nil once subscribed, else the reply
    /// that refused it.
    func subscribeFromNow(_ collection: String, then: @escaping (String?) -> Void) {
        send(.listPage(collection: collection, after: nil, limit: 1)) { [self] line in
            guard case .ok(_, .listed(_, _, let seq), _) = line.reply else { return then("LIST answered \(line.text)") }
            send(.subscribe(collection: collection, since: seq)) { line in
                guard case .ok = line.reply else { return then("SUB answered \(line.text)") }
                then(nil)
            }
        }
    }
}
