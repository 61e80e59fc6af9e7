/// The collections a session is subscribed to, each with the seq its subscriber is known to
/// have through.
final class SubscribedCollections {
    private var through: [String: Int64] = [:]

    var isEmpty: Bool { through.isEmpty }
    var names: Dictionary<String, Int64>.Keys { through.keys }

    func start(_ collection: String, through seq: Int64) {
        through[collection] = seq
    }

    /// The seq the subscriber of `collection` had when `seq` is past it (it has `seq` now);
    /// nil when it is not subscribed or has `seq` already.
    func advance(_ collection: String, to seq: Int64) -> Int64? {
        guard let had = through[collection], seq > had else { return nil }
        through[collection] = seq
        return had
    }

    /// The subscription to `from` carries on as `to`, at the same seq; whether there was one.
    func rename(_ from: String, to: String) -> Bool {
        guard let seq = through.removeValue(forKey: from) else { return false }
        through[to] = seq
        return true
    }

    /// Whether `collection` was subscribed.
    func end(_ collection: String) -> Bool {
        through.removeValue(forKey: collection) != nil
    }

    /// Ends every subscription; the collections they were to.
    func endAll() -> [String] {
        defer { through.removeAll() }
        return Array(through.keys)
    }
}
