import CLibUV
import Glibc

/// A `HOST:PORT` endpoint (`127.0.0.1:7420`, `[::1]:7420`, `localhost:7420`).
public struct SocketAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; nil when it is not one.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }

    /// Whether the address is this machine's own (127.0.0.0/8 or ::1): bytes to it never
    /// cross a network.
    public var isLoopback: Bool {
        host == "::1" || host.hasPrefix("127.")
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Fills a sockaddr for libuv and calls `body` with it.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) throws(LoopError) -> R) throws(LoopError) -> R {
        var storage = sockaddr_storage()
        let result: Int32 = withUnsafeMutablePointer(to: &storage) { pointer in
            if host.contains(":") {
                return uv_ip6_addr(host, Int32(port), UnsafeMutablePointer<sockaddr_in6>(OpaquePointer(pointer)))
            }
            return uv_ip4_addr(host, Int32(port), UnsafeMutablePointer<sockaddr_in>(OpaquePointer(pointer)))
        }
        try check(result, "address \(self)")
        return try withUnsafePointer(to: &storage) { pointer throws(LoopError) in
            try body(UnsafePointer<sockaddr>(OpaquePointer(pointer)))
        }
    }

    /// Reads a sockaddr libuv filled in.
    static func from(_ storage: sockaddr_storage) -> SocketAddress? {
        var storage = storage
        let family = Int32(storage.ss_family)
        var text = [CChar](repeating: 0, count: 64)
        let port: Int = withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                let address = UnsafePointer<sockaddr_in6>(OpaquePointer(pointer))
                uv_ip6_name(address, &text, text.count)
                return Int(UInt16(bigEndian: address.pointee.sin6_port))
            }
            let address = UnsafePointer<sockaddr_in>(OpaquePointer(pointer))
            uv_ip4_name(address, &text, text.count)
            return Int(UInt16(bigEndian: address.pointee.sin_port))
        }
        let host = String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return SocketAddress(host: host, port: port)
    }
}
