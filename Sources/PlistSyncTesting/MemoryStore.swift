import Foundation
import SyncCore
import SyncProtocol

/// A `ServerStore` in memory, for the session tests: the same rules as the SQLite and
/// PostgreSQL stores (revisions, placement and re-keying from SyncCore, collections, grants,
/// tokens, tombstone purges) over dictionaries, so a session runs with no file and no database.
/// The transcripts replayed against it check that it answers as the real stores do. Reads and
/// commits come from different threads; one lock guards everything, and a batch that fails
/// leaves nothing behind.
public final class MemoryStore: ServerStore, @unchecked Sendable {
    private struct Row {
        var state: RecordState
        var seq: Int64
        var updatedAt: Int64
    }

    private struct Contents {
        var seq: Int64 = 0
        var purgedSeq: Int64 = 0
        var collections: [String: (owner: String, members: [String: Role])] = [:]
        var records: [String: [RecordID: Row]] = [:]
        /// The change log by collection, in seq order, each change with the seq of its record's
        /// change before it.
        var log: [String: [(change: LoggedChange, previous: Int64?)]] = [:]
        /// The first seq the log can rebuild a listing at.
        var logFrom: Int64 = 0
        /// How far each thinning tier (by bucket seconds) has been thinned (seconds since 1970).
        var thinnedTo: [Int64: Int64] = [:]
        var users: [String: StoredUser] = [:]
        var tokens: [String: (info: TokenInfo, made: Int)] = [:]
        var tokensMade = 0
        var accountsEpoch: Int64 = 0
        var invitations: [String: Invitation] = [:]
    }

    private let lock = NSLock()
    private var contents = Contents()
    private let id = UUID().uuidString.lowercased()

    public init(users: [StoredUser]) {
        for user in users { contents.users[user.name] = user }
    }

    private func locked<T>(_ body: (inout Contents) throws(StoreFailure) -> T) throws(StoreFailure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&contents)
    }

    private func reading<T>(_ body: (Contents) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(contents)
    }

    public func serverID() -> String { id }
    public func currentSeq() -> Int64 { reading { $0.seq } }
    public func accountsEpoch() -> Int64 { reading { $0.accountsEpoch } }

    public func collections() -> [CollectionInfo] {
        reading { contents in
            contents.collections.map { name, entry in
                let seqs = [name, Names.conflictsCollection(of: name)].compactMap { contents.records[$0]?.values.map(\.seq).max() }
                return CollectionInfo(name: name, owner: entry.owner, members: entry.members, lastSeq: seqs.max() ?? 0)
            }.sorted { $0.name < $1.name }
        }
    }

    public func storedBytesByCollection() -> [String: Int] {
        reading { contents in
            contents.records.mapValues { rows in rows.values.reduce(0) { $0 + $1.state.storedFieldBytes } }.filter { $0.value > 0 }
        }
    }

    public func record(_ collection: String, _ id: String) -> RecordState? {
        reading { $0.records[collection]?[RecordID(id)]?.state }
    }

    public func list(_ collection: String) -> (records: [RecordState], seq: Int64) {
        reading { contents in
            let live = (contents.records[collection] ?? [:]).values.map(\.state).filter { $0.position != nil }
            return (live.sorted { ($0.position!, RecordID($0.id)) < ($1.position!, RecordID($1.id)) }, contents.seq)
        }
    }

    public func page(_ collection: String, after: RecordCursor?, limit: Int) -> (records: [RecordState], seq: Int64) {
        reading { contents in
            let live = (contents.records[collection] ?? [:]).values.map(\.state).compactMap { state in RecordCursor(state).map { ($0, state) } }
            let rest = live.filter { after?.precedes($0.0) ?? true }.sorted { $0.0.precedes($1.0) }
            return (rest.prefix(limit).map(\.1), contents.seq)
        }
    }

    public func versions(_ collection: String, _ id: String, limit: Int) -> [RecordVersion] {
        reading { contents in
            let changes = (contents.log[collection] ?? []).map(\.change).filter { RecordID($0.state.id) == RecordID(id) }
            return Array(RecordVersion.fromLog(changes).prefix(limit))
        }
    }

    public func log(_ collection: String, _ query: LogQuery) -> [LoggedChange] {
        reading { contents in
            let matching = (contents.log[collection] ?? []).map(\.change).filter { $0.author.matches(query.author) }
            guard let since = query.since else { return Array(matching.suffix(query.limit)) }
            return Array(matching.filter { $0.seq > since }.prefix(query.limit))
        }
    }

    public func list(_ collection: String, at seq: Int64) -> [RecordState]? {
        reading { contents in
            let ids = (contents.records[collection] ?? [:]).values.map(\.state.id)
            return Self.states(contents, collection, ids, at: seq)?.values.filter { $0.position != nil }.sorted(by: RecordState.inListOrder)
        }
    }

    public func states(_ collection: String, _ ids: [String], at seq: Int64) -> [String: RecordState]? {
        reading { Self.states($0, collection, ids, at: seq) }
    }

    /// Each record's state at `seq`: its row when not changed since, else the change before its
    /// first change after `seq`; nil when that change is no longer kept.
    private static func states(_ contents: Contents, _ collection: String, _ ids: [String], at seq: Int64) -> [String: RecordState]? {
        guard LogReach.covers(seq, completeFrom: contents.logFrom, current: contents.seq) else { return nil }
        let log = contents.log[collection] ?? []
        var states: [String: RecordState] = [:]
        for id in ids {
            guard let row = contents.records[collection]?[RecordID(id)] else { continue }
            if row.seq <= seq {
                states[id] = row.state
                continue
            }
            guard let first = log.first(where: { $0.change.seq > seq && RecordID($0.change.state.id) == RecordID(id) }) else { return nil }
            guard let previous = first.previous else { continue }
            guard let before = log.first(where: { $0.change.seq == previous }) else { return nil }
            states[id] = before.change.state
        }
        return states
    }

    public func changes(_ collection: String, since: Int64, limit: Int) -> (changes: [Change], seq: Int64)? {
        reading { contents in
            if since > 0, since < contents.purgedSeq { return nil }
            let rows = (contents.records[collection] ?? [:]).values.filter { $0.seq > since }.sorted { $0.seq < $1.seq }.prefix(limit)
            return (rows.map { Change(collection: collection, seq: $0.seq, state: $0.state) }, contents.seq)
        }
    }

    public func user(named name: String) -> StoredUser? { reading { $0.users[name] } }
    public func invitation(hash: String) -> Invitation? { reading { $0.invitations[hash] } }
    public func invitations(of collection: String) -> [Invitation] {
        reading { $0.invitations.values.filter { $0.collection == collection }.sorted { ($0.createdAt, $0.hash) < ($1.createdAt, $1.hash) } }
    }
    public func users() -> [StoredUser] { reading { $0.users.values.sorted { $0.name < $1.name } } }
    public func tokenOwner(hash: String) -> String? { reading { $0.tokens[hash]?.info.user } }
    public func tokenExists(hash: String) -> Bool { tokenOwner(hash: hash) != nil }

    public func tokens(of user: String?) -> [TokenInfo] {
        reading { contents in
            contents.tokens.values.filter { user == nil || $0.info.user == user }.sorted { $0.made < $1.made }.map(\.info)
        }
    }

    /// The time commits are stamped with (seconds since 1970): the real time unless a test
    /// runs the server on virtual time, whose wall clock this must then be.
    public var wallClockSeconds: () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    public func commit(_ operations: [StoreOperation]) throws(StoreFailure) -> [StoreOutcome] {
        let now = wallClockSeconds()
        return try locked { contents throws(StoreFailure) in
            var batch = contents
            var outcomes: [StoreOutcome] = []
            for operation in operations { outcomes.append(try Self.apply(operation, to: &batch, now: now)) }
            contents = batch
            return outcomes
        }
    }

    public var location: String { "memory" }
    public func sizeBytes() -> Int64 { 0 }
    public var accountChanges: AccountChangeSignal? { nil }
    public var spaceReserve: SpaceReserve? { nil }

    // MARK: - Writes

    private static func apply(_ operation: StoreOperation, to contents: inout Contents, now: Int64) throws(StoreFailure) -> StoreOutcome {
        switch operation {
        case .put(let collection, let id, let baseRev, let fieldsJSON, let author):
            let current = contents.records[collection]?[RecordID(id)]?.state
            let stamp = Stamp(author: logged(author, contents), at: now)
            switch RevisionRules.put(baseRev: baseRev, over: current) {
            case .update(let rev, let position):
                return write(RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), collection, &contents, stamp)
            case .create(let rev):
                let last = SortedNeighbours((contents.records[collection] ?? [:]).values.map(\.state), moving: id).lastKey()
                let position = try key(between: last, nil)
                return write(RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON)), collection, &contents, stamp)
            case .conflict:
                return .conflict(collection: collection, id: id, current: current)
            }
        case .restore(let collection, let id, let baseRev, let target, let author):
            let current = contents.records[collection]?[RecordID(id)]?.state
            guard let rev = RevisionRules.restore(baseRev: baseRev, replacing: current?.head) else {
                return .conflict(collection: collection, id: id, current: current)
            }
            return write(RecordState(id: id, rev: rev, body: target?.body ?? .deleted), collection, &contents, Stamp(author: logged(author, contents), at: now))
        case .move(let collection, let id, let baseRev, let placement, let author):
            let stamp = Stamp(author: logged(author, contents), at: now)
            let current = contents.records[collection]?[RecordID(id)]?.state
            let neighbours = SortedNeighbours((contents.records[collection] ?? [:]).values.map(\.state), moving: id)
            switch placement.plan(moving: id, of: collection, baseRev: baseRev, over: current, in: neighbours) {
            case .conflict: return .conflict(collection: collection, id: id, current: current)
            case .refused(let error): return .refused(error)
            case .place(let state): return write(state, collection, &contents, stamp)
            case .rebalance(let fieldsJSON, let lower, let upper):
                let states = LocalRekey.states(moving: id, baseRev: baseRev, fieldsJSON: fieldsJSON, between: lower, upper, in: neighbours)
                return StoreOutcome.rebalanced(writing: states) { state in write(state, collection, &contents, stamp) }
            }
        case .delete(let collection, let id, let baseRev, let author):
            let current = contents.records[collection]?[RecordID(id)]?.state
            guard let rev = RevisionRules.delete(baseRev: baseRev, over: current) else {
                return .conflict(collection: collection, id: id, current: current)
            }
            return write(RecordState(id: id, rev: rev, body: .deleted), collection, &contents, Stamp(author: logged(author, contents), at: now))
        case .createCollection(let name, let owner):
            guard contents.collections[name] == nil else { return .refused(ProtocolError(.exists, "collection \(name) exists")) }
            contents.collections[name] = (owner, [owner: .admin])
            return .done
        case .dropCollection(let name):
            guard contents.collections.removeValue(forKey: name) != nil else { return .refused(ProtocolError(.notFound, "no collection \(name)")) }
            contents.invitations = contents.invitations.filter { $0.value.collection != name }
            for gone in [name, Names.conflictsCollection(of: name)] {
                contents.records[gone] = nil
                contents.log[gone] = nil
            }
            return .done
        case .renameCollection(let from, let to):
            guard contents.collections[to] == nil else { return .refused(ProtocolError(.exists, "collection \(to) exists")) }
            guard let entry = contents.collections.removeValue(forKey: from) else { return .refused(ProtocolError(.notFound, "no collection \(from)")) }
            contents.collections[to] = entry
            for (hash, invitation) in contents.invitations where invitation.collection == from { contents.invitations[hash]?.collection = to }
            for (old, new) in [(from, to), (Names.conflictsCollection(of: from), Names.conflictsCollection(of: to))] {
                contents.records[new] = contents.records.removeValue(forKey: old)
                contents.log[new] = contents.log.removeValue(forKey: old)?.map { entry in
                    var moved = entry
                    moved.change.collection = new
                    return moved
                }
            }
            return .done
        case .grant(let collection, let user, let role):
            guard contents.users[user] != nil else { return .refused(ProtocolError(.notFound, "no user \(user)")) }
            contents.collections[collection]?.members[user] = role
            return .done
        case .createToken(let hash, let user, let label, let endsWithBrowser):
            contents.tokensMade += 1
            contents.tokens[hash] = (TokenInfo(hash: hash, user: user, label: label, createdAt: now, lastUsedAt: nil, endsWithBrowser: endsWithBrowser), contents.tokensMade)
            return .done
        case .createInvitation(let invitation):
            contents.invitations[invitation.hash] = invitation
            return .done
        case .revokeInvitation(let collection, let id):
            let matching = contents.invitations.values.filter { $0.collection == collection && $0.hash.hasPrefix(id) }
            guard matching.count == 1, let gone = matching.first else {
                return .refused(ProtocolError(matching.isEmpty ? .notFound : .badRequest,
                                              matching.isEmpty ? "no invitation \(id) to \(collection)" : "more than one invitation has id \(id)"))
            }
            contents.invitations[gone.hash] = nil
            contents.tokens = contents.tokens.filter { $0.value.info.invitation != gone.id }
            contents.accountsEpoch += 1
            return .done
        case .redeemInvitation(let hash, let user, let newPasswordHash, let token, let at):
            guard let invitation = contents.invitations[hash] else { return .refused(ProtocolError(.authFailed, "no such invitation")) }
            if let closed = invitation.closedReason(at: at) { return .refused(closed) }
            guard contents.collections[invitation.collection] != nil else { return .refused(ProtocolError(.notFound, "no collection \(invitation.collection)")) }
            if let newPasswordHash {
                guard contents.users[user] == nil else { return .refused(ProtocolError(.exists, "user \(user) exists; log in to it instead")) }
                contents.users[user] = StoredUser(name: user, passwordHash: newPasswordHash, isAdmin: false)
            } else if contents.users[user] == nil {
                return .refused(ProtocolError(.notFound, "no user \(user)"))
            }
            let held = contents.collections[invitation.collection]?.members[user]
            contents.collections[invitation.collection]?.members[user] = max(held ?? invitation.role, invitation.role)
            contents.invitations[hash]?.uses += 1
            contents.tokensMade += 1
            contents.tokens[token.hash] = (TokenInfo(hash: token.hash, user: user, label: token.label, createdAt: now, lastUsedAt: nil,
                                                     endsWithBrowser: token.endsWithBrowser, invitation: invitation.id), contents.tokensMade)
            contents.accountsEpoch += 1
            return .done
        case .revokeToken(let hash, let user):
            guard let token = contents.tokens[hash], user == nil || token.info.user == user else {
                return .refused(ProtocolError(.notFound, "no such token"))
            }
            contents.tokens[hash] = nil
            return .done
        case .touchToken(let hash, let time):
            contents.tokens[hash]?.info.lastUsedAt = time
            return .done
        case .addUser(let name, let passwordHash, let isAdmin):
            guard contents.users[name] == nil else { return .refused(ProtocolError(.exists, "user \(name) exists")) }
            contents.users[name] = StoredUser(name: name, passwordHash: passwordHash, isAdmin: isAdmin)
            contents.accountsEpoch += 1
            return .done
        case .setPassword(let name, let passwordHash, let kept):
            guard contents.users[name] != nil else { return .refused(ProtocolError(.notFound, "no user \(name)")) }
            contents.users[name]?.passwordHash = passwordHash
            contents.tokens = contents.tokens.filter { $0.value.info.user != name || $0.key == kept }
            contents.accountsEpoch += 1
            return .done
        case .removeUser(let name):
            guard contents.users.removeValue(forKey: name) != nil else { return .refused(ProtocolError(.notFound, "no user \(name)")) }
            contents.tokens = contents.tokens.filter { $0.value.info.user != name }
            for collection in contents.collections.keys { contents.collections[collection]?.members[name] = nil }
            contents.accountsEpoch += 1
            return .done
        case .setServerAdmin(let name, let isAdmin):
            guard contents.users[name] != nil else { return .refused(ProtocolError(.notFound, "no user \(name)")) }
            contents.users[name]?.isAdmin = isAdmin
            contents.accountsEpoch += 1
            return .done
        case .purgeTombstones(let cutoff, let history):
            for (collection, rows) in contents.records {
                for (id, row) in rows where row.state.position == nil && row.updatedAt < cutoff {
                    contents.purgedSeq = max(contents.purgedSeq, row.seq)
                    contents.logFrom = max(contents.logFrom, row.seq)
                    contents.records[collection]?[id] = nil
                    contents.log[collection]?.removeAll { RecordID($0.change.state.id) == id }
                }
            }
            for (collection, entries) in contents.log {
                let latest = Set((contents.records[collection] ?? [:]).values.map(\.seq))
                contents.log[collection] = entries.filter { $0.change.at >= history.cutoff || latest.contains($0.change.seq) }
            }
            Self.thin(&contents, history)
            contents.invitations = contents.invitations.filter { $0.value.expiresAt >= cutoff && ($0.value.uses < $0.value.usesAllowed || $0.value.createdAt >= cutoff) }
            return .done
        }
    }

    /// Thins each tier from where the last purge left it, as the SQLite store does.
    private static func thin(_ contents: inout Contents, _ history: HistoryRetention) {
        for tier in history.tiers {
            let from = max(contents.thinnedTo[tier.bucket] ?? tier.from, tier.from)
            guard from < tier.to else { continue }
            for (collection, entries) in contents.log {
                let window = entries.filter { $0.change.at >= from && $0.change.at < tier.to }.map { entry in
                    HistoryRetention.Entry(seq: entry.change.seq, collection: collection, id: entry.change.state.id, at: entry.change.at, previous: entry.previous)
                }
                let (drop, relink) = HistoryRetention.thin(window, bucket: tier.bucket)
                let gone = Set(drop)
                var links: [Int64: Int64?] = [:]
                for link in relink { links[link.seq] = link.previous }
                contents.log[collection] = entries.filter { !gone.contains($0.change.seq) }.map { entry in
                    guard let previous = links[entry.change.seq] else { return entry }
                    return (entry.change, previous)
                }
                if let latest = relink.map(\.seq).max() { contents.logFrom = max(contents.logFrom, latest) }
            }
            contents.thinnedTo[tier.bucket] = tier.to
        }
    }

    /// Who made a change and when, as the log keeps it.
    private struct Stamp {
        var author: LoggedAuthor
        var at: Int64
    }

    private static func logged(_ author: ChangeAuthor, _ contents: Contents) -> LoggedAuthor {
        LoggedAuthor(author, label: author.tokenHash.flatMap { contents.tokens[$0]?.info.label })
    }

    private static func write(_ state: RecordState, _ collection: String, _ contents: inout Contents, _ stamp: Stamp) -> StoreOutcome {
        contents.seq += 1
        let row = contents.records[collection]?[RecordID(state.id)]
        let previous = row?.state
        contents.log[collection, default: []].append(
            (LoggedChange(collection: collection, seq: contents.seq, state: state, author: stamp.author, at: stamp.at), row?.seq))
        contents.records[collection, default: [:]][RecordID(state.id)] = Row(state: state, seq: contents.seq, updatedAt: stamp.at)
        let delta = state.storedFieldBytes - (previous?.storedFieldBytes ?? 0)
        return .changed(Change(collection: collection, seq: contents.seq, state: state, storedBytesDelta: delta))
    }

    private static func key(between lower: String?, _ upper: String?) throws(StoreFailure) -> String {
        do {
            return try PositionKey.between(lower, upper)
        } catch {
            throw StoreFailure(.failed, "position keys exhausted between \(lower ?? "start") and \(upper ?? "end")")
        }
    }
}
