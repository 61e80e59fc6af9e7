import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// The verbs a session carries out (all but record writes and logins), and the role each needs.
extension Session {
    func execute(_ tag: String, _ command: Command) {
        guard user != nil || command.allowedBeforeAuth else {
            send(ResponseLine.error(tag, ProtocolError(.authRequired, "log in first with AUTH")))
            return
        }
        do {
            try perform(tag, command)
        } catch let error as ProtocolError {
            send(ResponseLine.error(tag, error))
        } catch {
            ServerLog.error("request \(tag) from \(address) failed: \(error)")
            send(ResponseLine.error(tag, ProtocolError(.internal, "the server could not read its store")))
        }
    }

    func perform(_ tag: String, _ command: Command) throws {
        switch command {
        case .hello(let version, _):
            guard version == "1" else {
                throw ProtocolError(.unsupportedVersion, "this server speaks protocol 1")
            }
            send(ResponseLine.ok(tag, "HELLO", "1", server.serverID, server.limitsJSON))
        case .auth(let name, let password):
            authenticate(tag, name: name, password: password)
        case .authToken(let token):
            awaitingAsync = true
            server.logins.checkToken(token, from: address, isStillWanted: { [weak self] in self?.closeReason == nil }) { [self] result in
                switch result {
                case .success(let (account, hash)):
                    loggedIn(tag, account, tokenHash: hash)
                    // For the devices list; nobody waits for it.
                    perform(.commit(.touchToken(hash: hash, at: Int64(Date().timeIntervalSince1970)), completion: { _ in }))
                case .failure(let refusal): refuseLogin(tag, refusal, user: nil)
                }
            }
        case .tokenNew(let label):
            let token = Crypto.newToken()
            storeOperation(tag, .createToken(hash: Crypto.sha256Hex(token), user: user!, label: label)) { _ in
                ResponseLine.ok(tag, "TOKEN", token)
            }
        case .tokenList:
            let tokens = try server.store.tokens(of: user!)
            for token in tokens { send(ServerNotice.token(token, isThisConnection: token.hash == tokenHash).line) }
            send(ResponseLine.ok(tag, "TOKEN", "LIST", String(tokens.count)))
        case .tokenRevoke(let tokenOrID):
            let hash = try revocableTokenHash(tokenOrID)
            storeOperation(tag, .revokeToken(hash: hash, user: isAdmin ? nil : user!)) { [server] _ in
                // This connection too, if it logged in with that token: after the OK goes out.
                server.loop.atEndOfTurn { server.tokenRevoked(hash) }
                return ResponseLine.ok(tag, "TOKEN", "REVOKED")
            }
        case .create(let name):
            let owner = user!
            let quota = server.configuration.maxCollectionsPerUser
            if !isAdmin, quota > 0, server.directory.owned(by: owner) >= quota {
                throw ProtocolError(.quota, "\(owner) owns \(quota) collections, the most this server allows (--max-collections-per-user)")
            }
            storeOperation(tag, .createCollection(name: name, owner: owner)) { [server] _ in
                server.collectionCreated(name, owner: owner)
                return ResponseLine.ok(tag, "CREATE", name)
            }
        case .drop(let collection):
            try requireRole(.admin, collection)
            storeOperation(tag, .dropCollection(name: collection)) { [server, user, address] _ in
                ServerLog.event("drop", ["collection": collection, "by": user ?? "-", "address": address])
                server.collectionDropped(collection)
                return ResponseLine.ok(tag, "DROP", collection)
            }
        case .rename(let from, let to):
            try requireRole(.admin, from)
            guard !server.directory.exists(to) else { throw ProtocolError(.exists, "collection \(to) exists") }
            storeOperation(tag, .renameCollection(from: from, to: to)) { [server, user, address] _ in
                ServerLog.event("rename", ["collection": from, "to": to, "by": user ?? "-", "address": address])
                server.collectionRenamed(from, to: to)
                return ResponseLine.ok(tag, "RENAME", from, to)
            }
        case .collections:
            watchesCollections = true
            let visible = server.directory.visible(to: user!, isAdmin: isAdmin)
            for entry in visible { send(ServerNotice.collection(name: entry.name, role: entry.role, seq: entry.seq).line) }
            send(ResponseLine.ok(tag, "COLLECTIONS", String(visible.count)))
        case .grant(let collection, let grantee, let role):
            try requireRole(.admin, collection)
            storeOperation(tag, .grant(collection: collection, user: grantee, role: role)) { [server, user, address] _ in
                ServerLog.event("grant", ["collection": collection, "to": grantee, "role": role?.name ?? "none", "by": user ?? "-", "address": address])
                server.granted(role, to: grantee, in: collection)
                return ResponseLine.ok(tag, "GRANT")
            }
        case .put, .move, .delete:
            submitWrite(tag, command, bytes: 0)
        case .get(let collection, let id):
            try requireRole(.read, collection)
            guard let state = try server.store.record(collection, id) else {
                throw ProtocolError(.notFound, "no record \(ValueJSON.quoted(id)) in \(collection)")
            }
            send(ResponseLine.ok(tag, "GET", collection, ResponseLine.argument(id), state.wireTail))
        case .list(let collection):
            try requireRole(.read, collection)
            // One consistent snapshot, written out a page at a time as the client reads it.
            let (records, seq) = try server.store.list(collection)
            var next = 0
            reply = { () -> (String, Bool) in
                var output = ""
                let end = min(records.count, next + Self.replayPageSize)
                for record in records[next..<end] {
                    output += ServerNotice.record(collection: collection, state: record).line
                }
                next = end
                guard next == records.count else { return (output, false) }
                return (output + ResponseLine.ok(tag, "LIST", collection, String(records.count), String(seq)), true)
            }
        case .subscribe(let collection, let since):
            try requireRole(.read, collection)
            // A new SUB replaces the old one: nothing live is sent until its replay is done.
            dropSubscription(collection)
            startReplay(tag, collection, since: since)
        case .unsubscribe(let collection):
            dropSubscription(collection)
            send(ResponseLine.ok(tag, "UNSUB", collection))
        case .ping:
            send(ResponseLine.ok(tag, "PONG"))
        case .stats:
            send(ResponseLine.ok(tag, "STATS", server.statsJSON()))
        case .quit:
            send(ResponseLine.ok(tag, "BYE"))
            close(.quit)
        }
    }

    /// Replays changes after `since` a page at a time (each page a fresh read, so changes that
    /// commit meanwhile are picked up by later pages, in seq order), then subscribes with no gap:
    /// the last page and the subscription happen in the same loop turn.
    func startReplay(_ tag: String, _ collection: String, since: Int64) {
        var cursor = since
        reply = { [unowned self] () -> (String, Bool) in
            let page: (changes: [Change], seq: Int64)?
            do {
                page = try server.store.changes(collection, since: cursor, limit: Self.replayPageSize)
            } catch {
                ServerLog.error("replaying \(collection) for \(address): \(error)")
                return (ResponseLine.error(tag, ProtocolError(.internal, "the server could not read its store")), true)
            }
            guard let page else {
                return (ResponseLine.error(tag, ProtocolError(.expired, "changes after \(cursor) are no longer kept; resubscribe with SINCE 0")), true)
            }
            var output = ""
            for change in page.changes { output += change.line }
            guard page.changes.count < Self.replayPageSize else {
                cursor = page.changes.last!.seq
                return (output, false)
            }
            let through = max(page.seq, page.changes.last?.seq ?? 0)
            subscriptions[collection] = through
            perform(.subscribe(collection))
            return (output + ResponseLine.ok(tag, "SUB", collection, String(through)), true)
        }
    }

    func requireRole(_ needed: Role, _ collection: String) throws(ProtocolError) {
        guard server.directory.exists(collection) else {
            throw ProtocolError(.notFound, "no collection \(collection)")
        }
        guard let role = server.directory.role(of: user!, isAdmin: isAdmin, in: collection) else {
            throw ProtocolError(.forbidden, "\(user!) has no access to \(collection)")
        }
        guard role >= needed else {
            throw ProtocolError(.forbidden, "\(user!) has \(role.name) access to \(collection); this needs \(needed.name)")
        }
    }
}
