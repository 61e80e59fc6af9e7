import EventLoop
import Foundation
import SyncCore
import SyncProtocol

/// Record writes: handed to the group committer with a reply slot each, quotas reserved when
/// admitted.
extension Session {
    func submitWrite(_ tag: String, _ command: Command, bytes: Int) {
        let slot = replies.reserve(bytes: bytes)
        let operation: StoreOperation
        let verb: Reply.WriteVerb
        var reservation: (owner: String, bytes: Int)?
        do throws(ProtocolError) {
            if context.diskFull, !command.isDelete {
                throw ProtocolError(.noSpace, "the server's disk is full: only DEL is accepted until it has room")
            }
            switch command {
            case .put(let collection, let id, let baseRev, let json):
                try requireRole(.write, collection)
                guard json.utf8.count <= context.configuration.limits.maxRecordBytes else {
                    throw ProtocolError(.tooLarge, "record is \(json.utf8.count) bytes; the limit is \(context.configuration.limits.maxRecordBytes)")
                }
                reservation = try reserveQuota(collection, adding: json.utf8.count, creating: baseRev == 0)
                operation = .put(collection: collection, id: id, baseRev: baseRev, fieldsJSON: json, by: author)
                verb = .put
            case .move(let collection, let id, let baseRev, let placement):
                try requireRole(.write, collection)
                operation = .move(collection: collection, id: id, baseRev: baseRev, placement: placement, by: author)
                verb = .move
            case .delete(let collection, let id, let baseRev):
                try requireRole(.write, collection)
                operation = .delete(collection: collection, id: id, baseRev: baseRev, by: author)
                verb = .delete
            default:
                // Only record writes come here; any other command must still get its slot answered.
                throw ProtocolError(.internal, "not a record write")
            }
        } catch {
            fillSlot(slot, with: .error(tag: tag, error))
            return
        }
        commit(operation) { [self] result in
            if let reservation { context.directory.release(reservation.bytes, reservedFor: reservation.owner) }
            fillSlot(slot, with: Self.writeReply(tag, verb, result))
        }
    }

    /// With `--max-bytes-per-user`, a PUT into a collection whose owner is at the quota is
    /// refused: a create when it would pass it, an update once the owner is over it (an update
    /// may shrink a record; a DEL is always allowed, so space can be freed). Writes admitted and
    /// not yet committed count as their whole size, so writes in one batch cannot pass the quota
    /// together; the reservation (returned) ends when the write's commit does.
    func reserveQuota(_ collection: String, adding bytes: Int, creating: Bool) throws(ProtocolError) -> (owner: String, bytes: Int)? {
        let quota = context.configuration.maxBytesPerUser
        guard quota > 0, let owner = context.directory.owner(of: collection) else { return nil }
        let used = context.directory.bytesClaimed(by: owner)
        guard creating ? used + bytes > quota : used >= quota else {
            context.directory.reserve(bytes, for: owner)
            return (owner, bytes)
        }
        throw ProtocolError(.quota, "the collections of \(owner) hold \(used) bytes (writes in progress included); the limit is \(quota) (--max-bytes-per-user)")
    }

    static func writeReply(_ tag: String, _ verb: Reply.WriteVerb, _ result: Result<StoreOutcome, StoreFailure>) -> ServerOutput {
        switch result {
        case .success(.changed(let change)), .success(.rebalanced(let change, _)):
            .ok(tag: tag, .written(verb, collection: change.collection, id: change.state.id, rev: change.state.rev, seq: change.seq))
        case .success(.conflict(let collection, let id, let current)):
            .conflict(tag: tag, collection: collection, id: id, current: current)
        case .success(.refused(let error)):
            .error(tag: tag, error)
        case .success(.done):
            .error(tag: tag, ProtocolError(.internal, "unexpected store outcome"))
        case .failure(let error):
            .error(tag: tag, commitFailure(error))
        }
    }

    static func commitFailure(_ error: StoreFailure) -> ProtocolError {
        switch error.kind {
        case .diskFull: ProtocolError(.noSpace, "the server's disk is full; nothing was written; retry later")
        case .unavailable: ProtocolError(.unavailable, "the store is not answering; nothing was written; retry in a moment")
        case .failed: ProtocolError(.internal, "the change could not be committed; retry")
        }
    }

    /// Runs a non-record store operation as a barrier: later requests wait for its reply.
    func storeOperation(_ tag: String, _ operation: StoreOperation, onDone: @escaping (StoreOutcome) -> ServerOutput) {
        wait.forCommit()
        commit(operation) { [self] result in
            finishAsync(Self.administrativeReply(tag, result) { onDone(.done) })
        }
    }

    /// `TOKEN REVOKE`: the token itself, or its id from TOKEN LIST (among the user's own
    /// tokens; a server admin's, among all, read from the store first).
    func revokeToken(_ tag: String, _ tokenOrID: String) {
        guard TokenInfo.isID(tokenOrID) else { return revoke(tag, tokenHash: Crypto.sha256Hex(tokenOrID)) }
        ask(.tokens(of: isAdmin ? nil : user!), tag) { [self] answer in
            guard case .tokens(let tokens) = answer else { return }
            let matching = tokens.filter { $0.id == tokenOrID }
            guard let first = matching.first else { throw ProtocolError(.notFound, "no such token") }
            guard matching.count == 1 else { throw ProtocolError(.badRequest, "more than one token has id \(tokenOrID); revoke it by the token") }
            revoke(tag, tokenHash: first.hash)
        }
    }

    private func revoke(_ tag: String, tokenHash hash: String) {
        storeOperation(tag, .revokeToken(hash: hash, user: isAdmin ? nil : user!)) { [self] _ in
            // Every connection logged in with it closes, this one too (after the OK goes out).
            emit(.announce(.tokenRevoked(hash: hash)))
            return .ok(tag: tag, .tokenRevoked)
        }
    }
}
