import EventLoop

/// Event-stream subscribers (the HTTP API's `GET …/events`) of one fan-out run: each sends its
/// request with a Bearer token, waits for the `ready` event, then has its raw bytes counted by
/// the shared `DeliveryTally`, as `SubscriberGroup` does for line-protocol subscribers.
final class EventStreamGroup {
    private(set) var connections: [TCPConnection] = []

    /// Opens `count` streams of `collection` after `since` at `address`; `ready` once all have
    /// their `ready` event, `failed` when one cannot connect or is refused or closed, `complete`
    /// once the tally has everything it expects.
    func open(
        count: Int, collection: String, since: String, token: String, loop: EventLoop, address: SocketAddress, tally: DeliveryTally,
        ready: @escaping () -> Void, failed: @escaping () -> Void, complete: @escaping () -> Void
    ) {
        var subscribed = 0
        let request = Array("GET /api/collections/\(collection)/events?since=\(since) HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
        let readyMarker = Array("event: ready\n".utf8)
        for _ in 0..<count {
            TCPConnection.connect(on: loop, to: address) { [self] result in
                guard case .success(let connection) = result else { return failed() }
                connections.append(connection)
                var head: [UInt8] = []
                var reading: (([UInt8]) -> Bool)?
                connection.onData = { bytes in
                    if let read = reading {
                        if read(bytes) { complete() }
                        return
                    }
                    head += bytes
                    guard head.starts(with: "HTTP/1.1 200".utf8) || head.count < 12 else { return failed() }
                    guard let end = Self.find(readyMarker, in: head) else { return }
                    let read = tally.subscriberReader()
                    reading = read
                    let rest = Array(head[(end + readyMarker.count)...])
                    head = []
                    subscribed += 1
                    if subscribed == count { ready() }
                    if !rest.isEmpty, read(rest) { complete() }
                }
                connection.onEnd = { _ in failed() }
                connection.write(request)
                connection.startReading()
            }
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
        }
        return nil
    }

    func close() {
        for connection in connections {
            connection.onEnd = nil
            connection.close()
        }
    }
}
