import EventLoop

/// Asks a Syncthing instance to rescan one path now (`POST /rest/db/scan`), the fastest way it
/// learns of a change; sent without waiting, on the scenario's loop.
public struct SyncthingRescan: Sendable {
    public var address: SocketAddress
    public var apiKey: String
    public var folderID: String

    public init(address: SocketAddress, apiKey: String, folderID: String) {
        self.address = address
        self.apiKey = apiKey
        self.folderID = folderID
    }

    /// `path` is relative to the shared folder and plain ASCII (no escaping needed).
    func send(path: String, on loop: EventLoop) {
        let request = "POST /rest/db/scan?folder=\(folderID)&sub=\(path) HTTP/1.1\r\nHost: \(address)\r\nX-API-Key: \(apiKey)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        TCPConnection.connect(on: loop, to: address) { result in
            guard case .success(let connection) = result else { return }
            connection.onData = { _ in }
            connection.onEnd = { _ in connection.close() }
            connection.startReading()
            connection.write(Array(request.utf8))
        }
    }
}
