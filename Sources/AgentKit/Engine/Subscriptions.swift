import SyncCore
import SyncProtocol

/// The engine's view of the server's collections on this connection: the user's role in each,
/// which are subscribed or subscribing (and what their replay brought), which are being created
/// from a folder, and which are detached (their folder vanished after they were mirrored here).
final class Subscriptions {
    /// Collections the user may read, with their role.
    private var roles: [String: Role] = [:]
    /// Whether `roles` holds the answer to this connection's COLLECTIONS (until then a folder
    /// without a collection is not made one).
    private(set) var knowsCollections = false
    private(set) var subscribed: Set<String> = []
    private var subscribing: Set<String> = []
    private var creating: Set<String> = []
    /// Ids seen in a full (SINCE 0) replay, to forget records the server no longer has.
    private var replaySeen: [String: Set<RecordID>] = [:]
    /// Ids whose files a replay wrote as the server has them: the scan at its end need not read
    /// them again (a save made since sends its own file event).
    private var writtenInReplay: [String: Set<RecordID>] = [:]
    /// Collections not mirrored (and never mass-deleted) until their folder is made again,
    /// then downloaded afresh.
    private var detached: Set<String> = []
    /// Whether the server keeps conflict copies in companion collections (`<c>~conflicts`), so
    /// every mirror receives them; a server that refuses them leaves copies local only.
    private(set) var sharesConflicts = true

    // MARK: The connection

    /// A fresh login: what the server has is learned afresh (a collection may have been
    /// dropped, or the store restored, while this agent was away).
    func connectionStarted() {
        connectionLost()
        roles.removeAll()
        knowsCollections = false
    }

    func connectionLost() {
        subscribed.removeAll()
        subscribing.removeAll()
        creating.removeAll()
    }

    func collectionsListed() {
        knowsCollections = true
    }

    // MARK: Roles

    func role(_ collection: String) -> Role? {
        roles[collection]
    }

    func setRole(_ collection: String, _ role: Role?) {
        roles[collection] = role
    }

    /// The user's access was removed: nothing more arrives for the collection or its companion.
    func accessRemoved(_ collection: String) {
        roles[collection] = nil
        subscribed.remove(collection)
        subscribed.remove(Names.conflictsCollection(of: collection))
    }

    /// The collection was deleted on the server.
    func dropped(_ collection: String) {
        accessRemoved(collection)
        detached.remove(collection)
    }

    // MARK: Subscribing

    func isSubscribed(_ collection: String) -> Bool {
        subscribed.contains(collection)
    }

    /// Whether changes for the collection are taken (subscribed, or its replay streaming in).
    func receives(_ collection: String) -> Bool {
        subscribed.contains(collection) || subscribing.contains(collection)
    }

    /// Whether a collection's replay is streaming in (a SUB not yet answered).
    var isReplaying: Bool { !subscribing.isEmpty }

    /// A SUB is to be sent: false when the collection is subscribed or subscribing already.
    func startSubscribing(_ collection: String, full: Bool) -> Bool {
        guard !subscribed.contains(collection), subscribing.insert(collection).inserted else { return false }
        if full { replaySeen[collection] = [] }
        writtenInReplay[collection] = []
        return true
    }

    /// The SUB was answered: the ids whose files its replay wrote.
    func subscribeAnswered(_ collection: String) -> Set<RecordID> {
        subscribing.remove(collection)
        return writtenInReplay.removeValue(forKey: collection) ?? []
    }

    /// The SUB succeeded: the ids a full replay brought (nil for one from a seq).
    func subscribeSucceeded(_ collection: String) -> Set<RecordID>? {
        subscribed.insert(collection)
        return replaySeen.removeValue(forKey: collection)
    }

    /// Stops taking the collection's changes; false when it was not subscribed.
    @discardableResult
    func unsubscribe(_ collection: String) -> Bool {
        subscribed.remove(collection) != nil
    }

    func seen(_ collection: String, _ id: RecordID) {
        replaySeen[collection]?.insert(id)
    }

    func wroteInReplay(_ collection: String, _ id: RecordID) {
        writtenInReplay[collection]?.insert(id)
    }

    /// Whether the replay in progress wrote the record's file (the scan that ends it skips it).
    func wasWrittenInReplay(_ collection: String, _ id: RecordID) -> Bool {
        writtenInReplay[collection]?.contains(id) ?? false
    }

    /// The file of a record the replay wrote changed since: the scan after the replay reads it.
    func changedInReplay(_ collection: String, _ id: RecordID) {
        writtenInReplay[collection]?.remove(id)
    }

    func conflictsNotShared() {
        sharesConflicts = false
    }

    // MARK: Creating and detaching

    /// A CREATE is to be sent: false when one is unanswered.
    func startCreating(_ collection: String) -> Bool {
        creating.insert(collection).inserted
    }

    func createAnswered(_ collection: String) {
        creating.remove(collection)
    }

    func isDetached(_ collection: String) -> Bool {
        detached.contains(collection)
    }

    /// False when the collection was detached already.
    func detach(_ collection: String) -> Bool {
        detached.insert(collection).inserted
    }

    /// False when the collection was not detached.
    func reattach(_ collection: String) -> Bool {
        detached.remove(collection) != nil
    }
}
