import CLibUV
import Dispatch
import Glibc
import Synchronization

/// A thread of its own for one kind of slow work (password hashing), so that work can never
/// queue in front of the thread pool's commits. Jobs run one at a time, in order; each result
/// comes back on the loop thread through one `uv_async_t`.
///
/// Loop-thread object; `submit` and `close` are called on the loop thread only. The worker
/// thread touches nothing but the job's own closure and the mutex-protected queues.
public final class WorkerThread {
    private let loop: EventLoop
    private let async: UnsafeMutablePointer<uv_async_t>
    private let shared: Shared
    private var completions: [UInt64: (Any) -> Void] = [:]
    private var nextID: UInt64 = 0
    private var closed = false

    /// Jobs submitted and not yet completed on the loop.
    public var pendingCount: Int { completions.count }

    public init(loop: EventLoop) {
        self.loop = loop
        async = .allocate(capacity: 1)
        shared = Shared(async: AsyncPointer(raw: async))
        uv_async_init(loop.raw, async) { handle in
            Unmanaged<WorkerThread>.fromOpaque(handle!.pointee.data).takeUnretainedValue().deliverResults()
        }
        async.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_unref(asHandle(async))
        var thread = pthread_t()
        let context = Unmanaged.passRetained(shared).toOpaque()
        let status = pthread_create(&thread, nil, { context in
            let shared = Unmanaged<Shared>.fromOpaque(context!).takeRetainedValue()
            shared.runJobs()
            return nil
        }, context)
        if status == 0 {
            pthread_detach(thread)
        } else {
            // No thread could be made: run jobs inline, still answering through the loop.
            Unmanaged<Shared>.fromOpaque(context).release()
            shared.runInline = true
        }
    }

    /// Runs `work` on the worker thread, then `completion` with its result on the loop thread.
    public func submit<Result: Sendable>(_ work: @escaping @Sendable () -> Result, then completion: @escaping (Result) -> Void) {
        guard !closed else { return }
        nextID += 1
        let id = nextID
        if completions.isEmpty { uv_ref(asHandle(async)) }
        completions[id] = { value in completion(value as! Result) }
        let job = Job(id: id, run: { ResultBox(value: work()) })
        if shared.runInline {
            shared.finish(job)
        } else {
            shared.enqueue(job)
        }
    }

    private func deliverResults() {
        for (id, result) in shared.takeResults() {
            guard let completion = completions.removeValue(forKey: id) else { continue }
            if completions.isEmpty { uv_unref(asHandle(async)) }
            completion(result.value)
        }
    }

    /// Stops the thread after the job in progress; pending completions are dropped.
    public func close() {
        guard !closed else { return }
        closed = true
        completions.removeAll()
        shared.stop()
        uv_close(asHandle(async)) { handle in
            let worker = Unmanaged<WorkerThread>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            worker.async.deallocate()
        }
    }
}

/// A job's result crossing back to the loop thread; written before the queue hands it over.
private struct ResultBox: @unchecked Sendable {
    let value: Any
}

private struct Job: Sendable {
    let id: UInt64
    let run: @Sendable () -> ResultBox
}

/// The async handle's address, handed to the worker thread for `uv_async_send` (thread-safe).
private struct AsyncPointer: @unchecked Sendable {
    let raw: UnsafeMutablePointer<uv_async_t>
}

/// What the loop thread and the worker thread share, each part behind the mutex.
private final class Shared: @unchecked Sendable {
    private struct State {
        var jobs: [Job] = []
        var results: [(UInt64, ResultBox)] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let async: AsyncPointer
    /// Set once at start, on the loop thread, when no thread could be created.
    var runInline = false

    init(async: AsyncPointer) {
        self.async = async
    }

    func enqueue(_ job: Job) {
        state.withLock { $0.jobs.append(job) }
        wake.signal()
    }

    func takeResults() -> [(UInt64, ResultBox)] {
        state.withLock { state in
            defer { state.results.removeAll() }
            return state.results
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    /// The worker thread's body: one job at a time until stopped.
    func runJobs() {
        while true {
            wake.wait()
            guard let job = state.withLock({ state -> Job? in
                state.stopped || state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }) else {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            finish(job)
        }
    }

    func finish(_ job: Job) {
        let result = job.run()
        // Sent under the lock, so `stop()` (also under it) orders it before the handle closes.
        state.withLock { state in
            guard !state.stopped else { return }
            state.results.append((job.id, result))
            uv_async_send(async.raw)
        }
    }
}
