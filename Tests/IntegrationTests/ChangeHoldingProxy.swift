import Foundation

/// A TCP relay between an agent and a real server that can hold back the server's `* CHANGE`
/// lines while letting replies through: the moment a write is acknowledged but its change has
/// not arrived yet, which a busy server or network produces by chance, made to last.
final class ChangeHoldingProxy: @unchecked Sendable {
    private let listener: Int32
    let port: Int
    private let serverPort: Int
    private let lock = NSLock()
    private var holding = false
    private var held: [(connection: Int32, line: [UInt8])] = []

    init(serverPort: Int) throws {
        self.serverPort = serverPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        guard bound, listen(listener, 4) == 0 else { throw LineClient.Failure(description: "proxy cannot listen") }
        Thread { [self] in acceptClients() }.start()
    }

    deinit { close(listener) }

    /// From now on, CHANGE lines wait (in order) until `release()`.
    func hold() {
        lock.withLock { holding = true }
    }

    /// Sends the held CHANGE lines, in the order they came, and stops holding.
    func release() {
        lock.withLock {
            holding = false
            for (connection, line) in held { Self.sendAll(connection, line) }
            held.removeAll()
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }

    private static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    private func acceptClients() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: UInt16(serverPort))
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard connected else {
                close(client)
                close(server)
                continue
            }
            Thread { [self] in relay(from: client, to: server, holdingChanges: false) }.start()
            Thread { [self] in relay(from: server, to: client, holdingChanges: true) }.start()
        }
    }

    private func relay(from source: Int32, to destination: Int32, holdingChanges: Bool) {
        forEachLine(of: source) { line in
            lock.withLock {
                if holdingChanges, holding, line.starts(with: Array("* CHANGE ".utf8)) {
                    held.append((destination, line))
                } else {
                    Self.sendAll(destination, line)
                }
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}

/// Reads `descriptor` until the peer closes, handing each line (with its LF) to `handle`: the
/// test servers' blocking read loop.
func forEachLine(of descriptor: Int32, _ handle: ([UInt8]) -> Void) {
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(descriptor, &chunk, chunk.count, 0)
        guard count > 0 else { return }
        pending += chunk[0..<count]
        while let newline = pending.firstIndex(of: 0x0A) {
            handle(Array(pending[...newline]))
            pending.removeFirst(newline + 1)
        }
    }
}
