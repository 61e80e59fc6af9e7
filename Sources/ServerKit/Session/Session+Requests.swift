import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// The verbs a session carries out (all but record writes and logins), and the role each needs.
extension Session {
    func execute(_ tag: String, _ command: Command) {
        guard user != nil || command.allowedBeforeAuth else {
            send(.error(tag: tag, ProtocolError(.authRequired, "log in first with AUTH")))
            return
        }
        do {
            try handleRequest(tag, command)
        } catch let error as ProtocolError {
            send(.error(tag: tag, error))
        } catch {
            ServerLog.error("request \(tag) from \(address) failed: \(error)")
            send(.error(tag: tag, ProtocolError(.internal, "the server could not read its store")))
        }
    }

    func handleRequest(_ tag: String, _ command: Command) throws {
        switch command {
        case .hello(let version, let clientName):
            guard version == "1" else {
                throw ProtocolError(.unsupportedVersion, "this server speaks protocol 1")
            }
            if front != .http { front = ChangeFront.line(clientName: clientName) }
            send(.ok(tag: tag, .hello(version: "1", serverID: context.serverID), payload: context.limitsJSON))
        case .auth(let name, let password):
            authenticate(tag, name: name, password: password)
        case .authToken(let token):
            authenticate(tag, token: token)
        case .tokenNew(let label, let endsWithBrowser):
            let token = Crypto.newToken()
            storeOperation(tag, .createToken(hash: Crypto.sha256Hex(token), user: user!, label: label, endsWithBrowser: endsWithBrowser)) { _ in
                .ok(tag: tag, .token(token))
            }
        case .tokenList:
            ask(.tokens(of: user!), tag) { [self] answer in
                guard case .tokens(let tokens) = answer else { return }
                send(.notices(tokens.map { .token($0, isThisConnection: $0.hash == tokenHash) }))
                send(.ok(tag: tag, .tokens(count: tokens.count)))
            }
        case .tokenRevoke(let tokenOrID):
            revokeToken(tag, tokenOrID)
        case .create(let name):
            let owner = user!
            let quota = context.configuration.maxCollectionsPerUser
            if !isAdmin, quota > 0, context.directory.owned(by: owner) >= quota {
                throw ProtocolError(.quota, "\(owner) owns \(quota) collections, the most this server allows (--max-collections-per-user)")
            }
            storeOperation(tag, .createCollection(name: name, owner: owner)) { [self] _ in
                emit(.announce(.created(collection: name, owner: owner)))
                return .ok(tag: tag, .created(name))
            }
        case .drop(let collection):
            try requireRole(.admin, collection)
            storeOperation(tag, .dropCollection(name: collection)) { [self] _ in
                ServerLog.event("drop", ["collection": collection, "by": user ?? "-", "address": address])
                emit(.announce(.dropped(collection: collection)))
                return .ok(tag: tag, .dropped(collection))
            }
        case .rename(let from, let to):
            try requireRole(.admin, from)
            guard !context.directory.exists(to) else { throw ProtocolError(.exists, "collection \(to) exists") }
            storeOperation(tag, .renameCollection(from: from, to: to)) { [self] _ in
                ServerLog.event("rename", ["collection": from, "to": to, "by": user ?? "-", "address": address])
                emit(.announce(.renamed(from: from, to: to)))
                return .ok(tag: tag, .renamed(from: from, to: to))
            }
        case .collections:
            watchesCollections = true
            let visible = context.directory.visible(to: user!, isAdmin: isAdmin)
            send(.notices(visible.map { .collection(name: $0.name, role: $0.role, seq: $0.seq) }))
            send(.ok(tag: tag, .collections(count: visible.count)))
        case .members(let collection):
            try requireRole(.read, collection)
            let members = context.directory.members(of: collection).sorted().compactMap { member in
                context.directory.role(of: member, isAdmin: false, in: collection).map { (member, $0) }
            }
            send(.notices(members.map { .member(user: $0.0, role: $0.1) }))
            send(.ok(tag: tag, .members(collection: collection, count: members.count)))
        case .grant, .userAdd, .userPassword, .userRemove, .userAdmin:
            // Logged-in connections pipeline these (`processInbox`); before login AUTH_REQUIRED answered.
            submitAdministration(tag, command, bytes: 0)
        case .userList:
            try listUsers(tag)
        case .passwd(let old, let new):
            changeOwnPassword(tag, old: old, new: new)
        case .inviteNew(let collection, let role, let expires, let uses, let note):
            try invite(tag, collection, role, expiresIn: expires, uses: uses, note: note)
        case .inviteList(let collection):
            try listInvitations(tag, collection)
        case .inviteRevoke(let collection, let id):
            try revokeInvitation(tag, collection, id: id)
        case .invitePeek(let secret):
            peekInvitation(tag, secret: secret)
        case .redeem(let secret, let account, let label, let endsWithBrowser):
            try redeem(tag, secret: secret, account: account, label: label, endsWithBrowser: endsWithBrowser)
        case .put, .move, .delete:
            submitWrite(tag, command, bytes: 0)
        case .get(let collection, let id):
            try requireRole(.read, collection)
            ask(.record(collection: collection, id: id), tag) { [self] answer in
                guard case .record(let found) = answer, let state = found else {
                    throw ProtocolError(.notFound, "no record \(ValueJSON.quoted(id)) in \(collection)")
                }
                send(.ok(tag: tag, .record(collection: collection, id: id, rev: state.rev, position: state.position), payload: state.fieldsJSON))
            }
        case .list(let collection):
            try requireRole(.read, collection)
            // One consistent snapshot, read and written out a page at a time as the client reads it.
            ask(.openListing(collection: collection), tag) { [self] answer in
                guard case .listing(let handle) = answer else { return }
                listingPage(tag, collection, handle, listed: 0)
            }
        case .versions(let collection, let id):
            try requireRole(.read, collection)
            ask(.versions(collection: collection, id: id, limit: Self.maxVersionsListed), tag) { [self] answer in
                guard case .versions(let versions) = answer else { return }
                if !versions.isEmpty { send(.notices(versions.map { .version(collection: collection, id: id, $0) })) }
                send(.ok(tag: tag, .versions(collection: collection, id: id, count: versions.count)))
            }
        case .listPage(let collection, let after, let limit):
            try requireRole(.read, collection)
            // One read of at most a page, along the order's index: the cost of a page, whatever
            // the collection's size.
            ask(.page(collection: collection, after: after, limit: limit), tag) { [self] answer in
                guard case .list(let (records, seq)) = answer else { return }
                if !records.isEmpty { send(.notices(records.map { .record(collection: collection, state: $0) })) }
                send(.ok(tag: tag, .listed(collection: collection, count: records.count, seq: seq)))
            }
        case .listAt(let collection, let seq):
            try listAt(tag, collection, seq: seq)
        case .listPageAt(let collection, let seq, let after, let limit):
            try listPageAt(tag, collection, seq: seq, after: after, limit: limit)
        case .log(let collection, let query):
            try log(tag, collection, query)
        case .revert(let collection, let seq, let author, let dryRun):
            try revert(tag, collection, to: seq, by: author, dryRun: dryRun)
        case .subscribe(let collection, let since):
            try requireRole(.read, collection)
            // A new SUB replaces the old one: nothing live is sent until its replay is done.
            dropSubscription(collection)
            replayPage(tag, collection, since: since)
        case .unsubscribe(let collection):
            dropSubscription(collection)
            send(.ok(tag: tag, .unsubscribed(collection: collection)))
        case .ping:
            send(.ok(tag: tag, .pong))
        case .whoami:
            send(.ok(tag: tag, .whoami(user: user!, isAdmin: isAdmin)))
        case .stats:
            send(.ok(tag: tag, .stats, payload: context.statsJSON()))
        case .quit:
            send(.ok(tag: tag, .bye))
            close(.quit)
        }
    }

    /// Sends the changes after `since`, one page a read (each a fresh read, so changes that
    /// commit meanwhile come in later pages, in seq order), then subscribes with no gap: the
    /// subscription starts in the loop turn the last page arrives, from the seq that page is
    /// current as of, unless changes after that seq were broadcast while it was read (then one
    /// more page is read). A collection dropped, renamed or put out of the user's reach before
    /// the replay ends is an error after the notice that said so, never a subscription.
    func replayPage(_ tag: String, _ collection: String, since cursor: Int64) {
        let query: StoreQuery = transport.takesEncodedLines
            ? .changeLines(collection: collection, since: cursor, limit: Self.replayPageSize)
            : .changes(collection: collection, since: cursor, limit: Self.replayPageSize)
        ask(query, tag) { [self] answer in
            let page: (output: ServerOutput, count: Int, lastSeq: Int64?, seq: Int64)?
            switch answer {
            case .changes(let found): page = found.map { (.changes($0.changes), $0.changes.count, $0.changes.last?.seq, $0.seq) }
            case .changeLines(let found): page = found.map { (.lines($0.lines), $0.lines.count, $0.lines.lastSeq, $0.seq) }
            default: return
            }
            // Dropped, renamed or out of reach while the page was read: the client has had the
            // notice, and a subscription to a name that is gone would outlive it.
            try requireRole(.read, collection)
            guard let page else {
                throw ProtocolError(.expired, "changes after \(cursor) are no longer kept; resubscribe with SINCE 0")
            }
            if page.count > 0 { send(page.output) }
            guard page.count < Self.replayPageSize else {
                wait.queue(.replay(tag: tag, collection: collection, since: page.lastSeq!))
                return
            }
            let through = max(page.seq, page.lastSeq ?? 0)
            guard context.directory.lastSeq(collection) <= through else {
                wait.queue(.replay(tag: tag, collection: collection, since: through))
                return
            }
            subscriptions.start(collection, through: through)
            emit(.subscribe(collection))
            send(.ok(tag: tag, .subscribed(collection: collection, through: through)))
        }
    }

    /// Sends the next page of a listing; the one after is read once the client has taken most
    /// of this one (`wait.nextPage`), so a large collection is never held whole. A line
    /// connection gets the page as lines the store wrote from its rows.
    func listingPage(_ tag: String, _ collection: String, _ handle: ListingHandle, listed: Int) {
        let query: StoreQuery = transport.takesEncodedLines
            ? .listingLines(handle, limit: Self.replayPageSize, collection: collection)
            : .listingPage(handle, limit: Self.replayPageSize)
        ask(query, tag) { [self] answer in
            let page: (output: ServerOutput, count: Int, seq: Int64)
            switch answer {
            case .list(let (records, seq)): page = (.notices(records.map { .record(collection: collection, state: $0) }), records.count, seq)
            case .lines(let lines, let seq): page = (.lines(lines), lines.count, seq)
            default: return
            }
            if page.count > 0 { send(page.output) }
            guard page.count < Self.replayPageSize else {
                wait.queue(.listing(tag: tag, collection: collection, handle, listed: listed + page.count))
                return
            }
            send(.ok(tag: tag, .listed(collection: collection, count: listed + page.count, seq: page.seq)))
        }
    }

    /// Reads from the store off the loop; later requests wait for the answer, which `then`
    /// turns into the reply (a `ProtocolError` it throws is the reply instead).
    func ask(_ query: StoreQuery, _ tag: String, then: @escaping (StoreAnswer) throws -> Void) {
        wait.forRead { [unowned self] result in
            do {
                switch result {
                case .success(let answer): try then(answer)
                case .failure(let failure): throw Self.readFailure(failure, tag: tag, address: address)
                }
            } catch let error as ProtocolError {
                send(.error(tag: tag, error))
            } catch {
                ServerLog.error("request \(tag) from \(address) failed: \(error)")
                send(.error(tag: tag, ProtocolError(.internal, "the server could not read its store")))
            }
            processInbox()
        }
        emit(.read(query))
    }

    /// The store's answer to the read in progress.
    func readAnswered(_ result: Result<StoreAnswer, StoreReads.Failure>) {
        guard closeReason == nil, let handler = wait.takeRead() else { return }
        handler(result)
    }

    /// The answer while the store does not answer in time (nothing was read or written).
    static let storeUnavailable = ProtocolError(.unavailable, "the store is not answering; retry in a moment")

    static func readFailure(_ failure: StoreReads.Failure, tag: String, address: String) -> ProtocolError {
        switch failure {
        case .unavailable:
            return Self.storeUnavailable
        case .failed(let error):
            ServerLog.error("request \(tag) from \(address): reading the store failed: \(error)")
            return ProtocolError(.internal, "the server could not read its store")
        }
    }

    func requireRole(_ needed: Role, _ collection: String) throws(ProtocolError) {
        let role: Role
        switch context.directory.access(of: user!, isAdmin: isAdmin, to: collection) {
        case .noCollection: throw ProtocolError(.notFound, "no collection \(collection)")
        case .noRole: throw ProtocolError(.forbidden, "\(user!) has no access to \(collection)")
        case .role(let granted): role = granted
        }
        guard role >= needed else {
            throw ProtocolError(.forbidden, "\(user!) has \(role.name) access to \(collection); this needs \(needed.name)")
        }
    }
}
