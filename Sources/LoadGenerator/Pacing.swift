import EventLoop

/// Spreads `total` sends at `rate` a second from now, checked every millisecond (a late tick
/// sends what is due); `sent` says how many have gone so far, `send` sends one more.
func pace(on loop: EventLoop, rate: Int, total: Int, sent: @escaping () -> Int, send: @escaping () -> Void) {
    let timer = LoopTimer(loop: loop)
    let startedAt = EventLoop.monotonicNanoseconds()
    timer.start(after: 1, repeatEvery: 1) {
        let due = min(total, Int(Double(EventLoop.monotonicNanoseconds() - startedAt) / 1e9 * Double(rate)) + 1)
        while sent() < due { send() }
        if sent() == total { timer.close() }
    }
}
