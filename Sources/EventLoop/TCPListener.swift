import CLibUV
import Glibc

/// A listening TCP socket that hands each accepted connection to `onConnection`.
public final class TCPListener {
    public let loop: EventLoop
    private let handle: UnsafeMutablePointer<uv_tcp_t>
    private let onConnection: (TCPConnection) -> Void
    private var closed = false

    /// The bound address (with the real port when 0 was asked for).
    public private(set) var address: SocketAddress

    /// Binds and listens; `onConnection` runs on the loop thread for each accepted client.
    public init(
        loop: EventLoop, address: SocketAddress, backlog: Int32 = 511,
        onConnection: @escaping (TCPConnection) -> Void
    ) throws(LoopError) {
        self.loop = loop
        self.address = address
        self.onConnection = onConnection
        handle = .allocate(capacity: 1)
        uv_tcp_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        do {
            try address.withSockaddr { sockaddr throws(LoopError) in
                try check(uv_tcp_bind(handle, sockaddr, 0), "bind \(address)")
            }
            try check(
                uv_listen(UnsafeMutablePointer(OpaquePointer(handle)), backlog) { server, status in
                    let listener = Unmanaged<TCPListener>.fromOpaque(server!.pointee.data).takeUnretainedValue()
                    guard status >= 0 else { return }
                    listener.acceptOne()
                }, "listen on \(address)")
        } catch {
            close()
            throw error
        }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            uv_tcp_getsockname(handle, UnsafeMutablePointer<sockaddr>(OpaquePointer($0)), &length)
        }
        if let bound = SocketAddress.from(storage) { self.address = bound }
    }

    private func acceptOne() {
        let connection = TCPConnection(loop: loop)
        let result = uv_accept(
            UnsafeMutablePointer(OpaquePointer(handle)), UnsafeMutablePointer(OpaquePointer(connection.handle)))
        guard result == 0 else {
            connection.close()
            return
        }
        connection.didConnect()
        onConnection(connection)
    }

    /// Stops accepting and releases the socket.
    public func close() {
        guard !closed else { return }
        closed = true
        uv_close(asHandle(handle)) { handle in
            let listener = Unmanaged<TCPListener>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            listener.handle.deallocate()
        }
    }
}
