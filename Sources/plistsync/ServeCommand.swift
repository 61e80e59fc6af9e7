import EventLoop
import Foundation
import ServerKit

/// `plistsync serve`: runs the server until SIGINT or SIGTERM.
enum ServeCommand: Subcommand {
    static let help = """
        OVERVIEW: Run the PlistSync server.

        USAGE: plistsync serve [--listen ADDR:PORT] [--data DIR] [options]

        OPTIONS:
          --listen ADDR:PORT       Address to listen on (default 127.0.0.1:7420; port 0 picks one).
          --data DIR               Data folder (default ./plistsync-data).
          --idle-timeout SECONDS   Close clients silent this long (default 300; 0 never).
          --tombstone-ttl SECONDS  Keep deleted records' tombstones this long (default 2592000, 30 days).
          --max-pending-output BYTES
                                   Unsent bytes a subscriber may hold before * BYE SLOW (default 8388608).
          --max-connections N      Open connections at most (default 16384); more get * BYE BUSY.
          --max-unauthenticated N  Connections not logged in at most (default 1024); the oldest
                                   idle one makes room for a new one.
          --preauth-timeout SECONDS
                                   Time a connection has to log in (default 10; 0 never).
          --max-collections-per-user N
                                   Collections a non-admin user may own (default 1000; 0 no limit).
          --max-bytes-per-user N   Bytes of records the collections one user owns may hold
                                   (default 0: no limit).
          --port-file FILE         Write the bound port to FILE once listening.
          --quiet                  Log errors only.
          -h, --help               Show this help.
        """

    static func run(_ arguments: [String]) throws {
        let options = try Arguments(
            arguments,
            valueOptions: [
                "listen", "data", "idle-timeout", "tombstone-ttl", "port-file", "max-pending-output", "max-connections",
                "max-unauthenticated", "preauth-timeout", "max-collections-per-user", "max-bytes-per-user",
            ], flagOptions: ["quiet"])
        guard options.positionals.isEmpty else { throw UsageError("unexpected argument '\(options.positionals[0])'") }
        var configuration = ServerConfiguration()
        if let listen = options.value("listen") {
            guard let address = SocketAddress(parsing: listen) else { throw UsageError("--listen must be ADDR:PORT, e.g. 127.0.0.1:7420") }
            configuration.listen = address
        }
        configuration.dataPath = options.value("data") ?? configuration.dataPath
        configuration.idleTimeoutSeconds = UInt64(try options.integer("idle-timeout", default: 300, range: 0...31_536_000))
        configuration.tombstoneTTLSeconds = UInt64(try options.integer("tombstone-ttl", default: 30 * 86_400, range: 0...3_153_600_000))
        configuration.limits.maxPendingOutputBytes = try options.integer(
            "max-pending-output", default: configuration.limits.maxPendingOutputBytes, range: 4096...(1 << 34))
        configuration.maxConnections = try options.integer("max-connections", default: configuration.maxConnections, range: 1...1_000_000)
        configuration.maxUnauthenticated = try options.integer(
            "max-unauthenticated", default: configuration.maxUnauthenticated, range: 1...1_000_000)
        configuration.preAuthTimeoutSeconds = UInt64(try options.integer("preauth-timeout", default: 10, range: 0...86_400))
        configuration.maxCollectionsPerUser = try options.integer(
            "max-collections-per-user", default: configuration.maxCollectionsPerUser, range: 0...100_000_000)
        configuration.maxBytesPerUser = try options.integer("max-bytes-per-user", default: 0, range: 0...(1 << 50))
        ServerLog.quiet = options.flag("quiet")
        // Whatever SQLite or we create in the data folder is the owner's alone.
        umask(0o077)

        // Each client is a file descriptor; the soft default (1024) is far below what one loop serves.
        OpenFileLimit.raiseToMaximum()
        let loop = EventLoop()
        let server: Server
        do {
            server = try Server(configuration: configuration, loop: loop)
            try server.start()
        } catch let error as LoopError where error.isAddressInUse {
            throw RuntimeError("\(configuration.listen) is already in use; is another server running? (--listen picks another)")
        } catch {
            throw RuntimeError("cannot start: \(error)")
        }
        if let portFile = options.value("port-file"), let port = server.boundAddress?.port {
            try? "\(port)\n".write(toFile: portFile, atomically: true, encoding: .utf8)
        }
        loop.run()
        loop.close()
        ServerLog.info("stopped")
    }
}
