import CLibUV

extension EventLoop {
    /// Runs `work` on libuv's thread pool, then `completion` with its result on the loop thread.
    ///
    /// For blocking calls (SQLite commits, password hashing) that must not stall the loop.
    /// `work` may touch only what it owns or what is safe across threads.
    public func runBlocking<Result: Sendable>(
        _ work: @escaping @Sendable () -> Result, then completion: @escaping (Result) -> Void
    ) {
        let box = WorkBox(work: work, completion: completion)
        let request = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(box).toOpaque()
        let status = uv_queue_work(raw, request, { request in
            Unmanaged<AnyWorkBox>.fromOpaque(request!.pointee.data).takeUnretainedValue().runWork()
        }, { request, _ in
            let box = Unmanaged<AnyWorkBox>.fromOpaque(request!.pointee.data).takeRetainedValue()
            request!.deallocate()
            box.complete()
        })
        if status < 0 {
            Unmanaged<AnyWorkBox>.fromOpaque(request.pointee.data).release()
            request.deallocate()
            completion(work())
        }
    }
}

/// Type-erased work item, so the C callbacks need not know the result type.
class AnyWorkBox: @unchecked Sendable {
    func runWork() {}
    func complete() {}
}

/// Holds the work, its result and the completion. `result` is written on a pool thread and read
/// on the loop thread after libuv's queue hands the request back, which orders the two.
private final class WorkBox<Result: Sendable>: AnyWorkBox, @unchecked Sendable {
    let work: @Sendable () -> Result
    let completion: (Result) -> Void
    var result: Result?

    init(work: @escaping @Sendable () -> Result, completion: @escaping (Result) -> Void) {
        self.work = work
        self.completion = completion
    }

    override func runWork() { result = work() }
    override func complete() { completion(result!) }
}
