/// The objects a libuv request carries through to its callback (`data`), retained until it runs.

/// Holds a write's bytes until libuv's write callback.
final class WriteBox {
    let segments: [(bytes: SharedBytes, range: Range<Int>)]
    let count: Int

    init(_ segments: [(bytes: SharedBytes, range: Range<Int>)], count: Int) {
        self.segments = segments
        self.count = count
    }
}

/// Carries a connect's completion through libuv.
final class ConnectBox {
    let connection: TCPConnection
    let completion: (Result<TCPConnection, LoopError>) -> Void

    init(_ connection: TCPConnection, _ completion: @escaping (Result<TCPConnection, LoopError>) -> Void) {
        self.connection = connection
        self.completion = completion
    }
}
