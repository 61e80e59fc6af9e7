import SyncCore

/// Checks password and token logins without letting them hurt anyone else: at most
/// `maxAttemptsInFlightPerAddress` attempts per address are worked on at once (the rest wait in
/// that address's line, one at most per connection, so the connection limits bound it and a
/// host opening 1,000 sessions at once is served, not refused), each is paced by `AuthThrottle`
/// before any hashing, hashing runs on a thread of its own (never the thread pool the commits
/// use), at most `maxQueuedHashes` wait for it (logins from an address the account knows in a
/// line of their own, served first), and every failure is answered a fixed time after the
/// attempt's turn came, so a wrong password, an unknown user and any account's iteration count
/// look the same from outside.
///
/// Server-thread object.
final class LoginGate {
    /// Why a login was not let in.
    enum Refusal: Error {
        /// Wrong user, password or token (answered after `failureDelayMilliseconds`).
        case failed
        /// Too many hashes are waiting; the client should try again shortly.
        case busy
        /// This address or account has used up its attempts for a while: retry after `seconds`.
        case rateLimited(seconds: UInt64)
        /// The store did not answer the account lookup in time.
        case unavailable
    }

    /// Every failed login is answered this long after its turn came (or when its hash is done, if
    /// that is later): longer than a default-strength hash takes on a slow machine.
    static let failureDelayMilliseconds: UInt64 = 1_000
    /// Password checks that may wait for the hashing thread at once.
    static let maxQueuedHashes = 64
    /// Attempts from one address being paced or hashed at once; more wait their turn.
    static let maxAttemptsInFlightPerAddress = 4
    /// An attempt whose turn is further away than this is refused (RATE_LIMITED, with the wait
    /// in the text) rather than held: well inside the pre-auth deadline, so the client is told.
    static let maxWaitMilliseconds: UInt64 = 5_000

    private let clock: any ServerClock
    private let reads: StoreReads
    private let hasher: any WorkLane
    /// Hashes new passwords (USER ADD, PASSWD): a thread of its own, so a script adding
    /// thousands of accounts never queues in front of a login.
    private let maker: any WorkLane
    private var throttle = AuthThrottle()
    /// Password checks waiting for the hashing thread, in two lines: logins from an address the
    /// account knows go first, so a flood of guesses from elsewhere does not keep the owner out
    /// past the pre-auth deadline. One check is on the thread at a time.
    private var knownLine: [HashJob] = []
    private var strangersLine: [HashJob] = []
    private var hashing = false
    private var hashesWaiting: Int { knownLine.count + strangersLine.count + (hashing ? 1 : 0) }

    private struct HashJob {
        let password: String
        let stored: String
        /// Whether the connection still waits for the answer (a gone one's check is not made).
        let isStillWanted: () -> Bool
        let done: (Bool) -> Void
    }
    private var timers: [ObjectIdentifier: any ScheduledCall] = [:]
    private var lines: [String: AddressLine] = [:]

    /// One address's attempts: how many are being worked on, and who waits.
    private struct AddressLine {
        var inFlight = 0
        var waiting: [() -> Void] = []
    }

    init(clock: any ServerClock, work: any ServerWork, reads: StoreReads) {
        self.clock = clock
        self.reads = reads
        hasher = work.lane(for: .passwordChecks)
        maker = work.lane(for: .passwordHashes)
    }

    /// Checks `password` for `name`; `completion` runs on the loop thread exactly once (unless
    /// the gate is closed first). Once `isStillWanted` says the asker has gone, no hash is made.
    func checkPassword(
        _ password: String, for name: String, from address: String,
        isStillWanted: @escaping () -> Bool,
        completion: @escaping (Result<StoredUser, Refusal>) -> Void
    ) {
        inLine(address) { [self] done in
            attempt(password, for: name, from: address, isStillWanted: isStillWanted) { result in
                done()
                completion(result)
            }
        }
    }

    /// Runs `body` when the address has a free place in its line; `body` calls `done` when it is
    /// finished with it.
    private func inLine(_ address: String, _ body: @escaping (_ done: @escaping () -> Void) -> Void) {
        let start = { [self] in
            lines[address, default: AddressLine()].inFlight += 1
            body { [self] in
                lines[address]?.inFlight -= 1
                if let next = lines[address]?.waiting.first {
                    lines[address]!.waiting.removeFirst()
                    next()
                } else if lines[address]?.inFlight == 0 {
                    lines[address] = nil
                }
            }
        }
        if (lines[address]?.inFlight ?? 0) < Self.maxAttemptsInFlightPerAddress {
            start()
        } else {
            lines[address]!.waiting.append(start)
        }
    }

    private func attempt(
        _ password: String, for name: String, from address: String,
        isStillWanted: @escaping () -> Bool,
        completion: @escaping (Result<StoredUser, Refusal>) -> Void
    ) {
        guard isStillWanted() else { return completion(.failure(.failed)) }
        let now = clock.milliseconds
        let earliest = throttle.earliestSlot(address: address, account: name, now: now)
        guard earliest - now <= Self.maxWaitMilliseconds else {
            return refuse(.rateLimited(seconds: (earliest - now + 999) / 1000), completion)
        }
        let slot = throttle.reserve(address: address, account: name, now: now)
        let check = { [self] in
            // The fixed failure delay counts from the attempt's turn, so waiting for a turn and
            // the delay add up: pacing is never hidden inside the delay.
            let turn = clock.milliseconds
            guard isStillWanted() else { return completion(.failure(.failed)) }
            let known = throttle.isKnown(address, for: name)
            guard (known ? knownLine.count : hashesWaiting) < Self.maxQueuedHashes else { return refuse(.busy, completion) }
            reads.read({ store throws(StoreFailure) in try store.user(named: name) }, then: { [self] lookup in
                let account: StoredUser?
                switch lookup {
                case .success(let found): account = found
                case .failure(.unavailable): return completion(.failure(.unavailable))
                case .failure(.failed(let error)):
                    ServerLog.error("reading user \(name): \(error)")
                    account = nil
                }
                guard let account else {
                    // No hash to check: the answer waits just as long as for a wrong password.
                    throttle.failed(address: address, now: clock.milliseconds)
                    return answerFailure(turn: turn, completion)
                }
                hash(HashJob(password: password, stored: account.passwordHash, isStillWanted: isStillWanted) { [self] matches in
                    if matches {
                        throttle.succeeded(address: address, account: name)
                        completion(.success(account))
                    } else {
                        throttle.failed(address: address, now: clock.milliseconds)
                        answerFailure(turn: turn, completion)
                    }
                }, known: known)
            })
        }
        if slot <= clock.milliseconds {
            check()
        } else {
            after(slot - clock.milliseconds, check)
        }
    }

    /// Queues a password check in its line and keeps the hashing thread busy with the first.
    private func hash(_ job: HashJob, known: Bool) {
        if known { knownLine.append(job) } else { strangersLine.append(job) }
        hashNext()
    }

    private func hashNext() {
        guard !hashing else { return }
        // The askers that have gone: no hash is made, and each attempt counts as a wrong one
        // (which frees its place in its address's line too). Answered on the way out, once the
        // next check is on the thread: an answer can start another attempt, which must queue.
        var abandoned: [HashJob] = []
        defer { for job in abandoned { job.done(false) } }
        var job: HashJob
        while true {
            if !knownLine.isEmpty {
                job = knownLine.removeFirst()
            } else if !strangersLine.isEmpty {
                job = strangersLine.removeFirst()
            } else {
                return
            }
            guard !job.isStillWanted() else { break }
            abandoned.append(job)
        }
        hashing = true
        let (password, stored) = (job.password, job.stored)
        hasher.submit({ PasswordHasher.verify(password, against: stored) }, then: { [self] matches in
            hashing = false
            job.done(matches)
            hashNext()
        })
    }

    /// Checks a login token (a SHA-256 lookup, no hashing thread needed).
    func checkToken(
        _ token: String, from address: String,
        isStillWanted: @escaping () -> Bool,
        completion: @escaping (Result<(StoredUser, tokenHash: String), Refusal>) -> Void
    ) {
        let arrived = clock.milliseconds
        let hash = Crypto.sha256Hex(token)
        reads.read({ store throws(StoreFailure) -> StoredUser? in
            guard let owner = try store.tokenOwner(hash: hash) else { return nil }
            return try store.user(named: owner)
        }, then: { [self] lookup in
            switch lookup {
            case .success(let account?): return completion(.success((account, hash)))
            case .failure(.unavailable): return completion(.failure(.unavailable))
            case .failure(.failed(let error)): ServerLog.error("reading a token's owner: \(error)")
            case .success(nil): break
            }
            let slot = throttle.tokenFailed(address: address, now: arrived)
            let answerAt = max(slot, arrived + Self.failureDelayMilliseconds)
            after(answerAt > clock.milliseconds ? answerAt - clock.milliseconds : 0) {
                if isStillWanted() { completion(.failure(.failed)) }
            }
        })
    }

    /// A refusal without a check is answered after the same delay as a failure, so a client
    /// cannot spin the loop with instant refusals (200 connections did 1M in 30 s).
    private func refuse<T>(_ refusal: Refusal, _ completion: @escaping (Result<T, Refusal>) -> Void) {
        after(Self.failureDelayMilliseconds) { completion(.failure(refusal)) }
    }

    private func answerFailure<T>(turn arrived: UInt64, _ completion: @escaping (Result<T, Refusal>) -> Void) {
        let answerAt = arrived + Self.failureDelayMilliseconds
        let now = clock.milliseconds
        guard answerAt > now else { return completion(.failure(.failed)) }
        after(answerAt - now) { completion(.failure(.failed)) }
    }

    /// A one-shot timer, kept so that `close()` can drop the answers still waiting.
    private func after(_ milliseconds: UInt64, _ body: @escaping () -> Void) {
        var key: ObjectIdentifier?
        let call = clock.after(milliseconds) { [self] in
            if let key { timers[key] = nil }
            body()
        }
        key = ObjectIdentifier(call)
        timers[key!] = call
    }

    /// Hashes a new password at `iterations`; `completion` gets the stored form on the server's thread.
    func hashNewPassword(_ password: String, iterations: Int, completion: @escaping (String) -> Void) {
        maker.submit({ PasswordHasher.hash(password, iterations: iterations) }, then: completion)
    }

    /// Looks an invitation up by its secret as a login is checked: in the address's line, at
    /// the address's pace, an unknown secret a strike against the address answered a fixed
    /// time after its turn. An invitation found is answered whether or not it is still open.
    func checkInvitation(
        _ secret: String, from address: String,
        isStillWanted: @escaping () -> Bool,
        completion: @escaping (Result<Invitation, Refusal>) -> Void
    ) {
        inLine(address) { [self] done in
            let finish = { (result: Result<Invitation, Refusal>) in
                done()
                completion(result)
            }
            let now = clock.milliseconds
            let slot = throttle.earliestSlot(address: address, now: now)
            guard slot - now <= Self.maxWaitMilliseconds else { return refuse(.rateLimited(seconds: (slot - now + 999) / 1000), finish) }
            let check = { [self] in
                let turn = clock.milliseconds
                guard isStillWanted() else { return finish(.failure(.failed)) }
                let hash = Crypto.sha256Hex(secret)
                reads.read({ store throws(StoreFailure) in try store.invitation(hash: hash) }, then: { [self] lookup in
                    switch lookup {
                    case .success(let invitation?): return finish(.success(invitation))
                    case .failure(.unavailable): return finish(.failure(.unavailable))
                    case .failure(.failed(let error)): ServerLog.error("reading an invitation: \(error)")
                    case .success(nil): break
                    }
                    throttle.failed(address: address, now: clock.milliseconds)
                    answerFailure(turn: turn, finish)
                })
            }
            if slot <= now { check() } else { after(slot - now, check) }
        }
    }

    /// Stops the hashing thread and drops logins still waiting for their turn (at shutdown).
    func close() {
        maker.close()
        hasher.close()
        for call in timers.values { call.cancel() }
        timers.removeAll()
    }
}
