import EventLoop
import Foundation
import PostgresKit
import PostgresStore
import SQLiteStore
import SyncCore
import ServerHTTP
import ServerKit
import TLSKit

/// `plistsync serve`: runs the server until SIGINT or SIGTERM.
enum ServeCommand: Subcommand {
    static let help = """
        OVERVIEW: Run the PlistSync server.

        USAGE: plistsync serve [--listen ADDR:PORT] [--data DIR] [options]

        OPTIONS:
          --listen ADDR:PORT       Address to listen on (default 127.0.0.1:7420; port 0 picks one).
          --data DIR               Data folder (else $PLISTSYNC_DATA, the config file's data, or
                                   ./plistsync-data).
          --store URL              Keep the records in PostgreSQL (postgresql://user@host:port/db)
                                   instead of the data folder: any number of servers may share
                                   one database, each serving the same collections (--data
                                   then only holds the TLS certificate).
          --config FILE            Options one a line, `name = value` (else $PLISTSYNC_CONFIG, or
                                   /etc/plistsync/server.conf when it exists); flags win over it.
          --idle-timeout SECONDS   Close clients silent this long (default 300; 0 never).
          --tombstone-ttl SECONDS  Keep deleted records' tombstones this long (default 2592000, 30 days).
          --history-days DAYS      Keep the change log (who changed what, when: LOG, VERSIONS,
                                   LIST AT, REVERT) this long (default 30): every change for a
                                   day, then a record's latest of each hour for a week, then of
                                   each day; a record's latest change stays as long as it does.
          --max-pending-output BYTES
                                   Unsent bytes a subscriber may hold before * BYE SLOW (default 8388608).
          --max-connections N      Open connections at most (default 16384); more get * BYE BUSY.
          --max-unauthenticated N  Connections not logged in at most (default 1024); the oldest
                                   idle one makes room for a new one.
          --preauth-timeout SECONDS
                                   Time a connection has to log in (default 10; 0 never).
          --max-collections-per-user N
                                   Collections a non-admin user may own (default 1000; 0 no limit).
          --invitations-make-accounts  Let an invitation's link make a new account (a name and
                                   a password); without it, invitees log in to an account they have.
          --password-iterations N  PBKDF2 iterations for passwords set over the wire (USER ADD,
                                   PASSWD; default 600000, OWASP 2023; at least 1000).
          --max-bytes-per-user N   Bytes of records the collections one user owns may hold
                                   (default 0: no limit).
          --max-buffered-bytes N   Bytes all connections together may hold unsent or unread
                                   (default 268435456); past it, connections not logged in are
                                   closed first, then the slowest readers.
          --socket-send-buffer N   The kernel's send buffer per client socket (default 262144;
                                   0: the kernel's autotuning, up to net.ipv4.tcp_wmem's max).
          --sqlite-cache-mb N      Page cache of each SQLite connection of the data folder's store
                                   (default 32; SQLite's own is 2): updates stay fast as the store
                                   grows while its B-tree's upper levels fit.
          --sqlite-mmap-mb N       Map this much of the store file into memory (default 0: off);
                                   reads skip a copy, but mapped pages count in the server's RSS.
          --store-timeout SECONDS  Time a store read or commit may take (default 5): past it,
                                   the request is answered ERR UNAVAILABLE and later reads fail
                                   at once until the store answers again; nothing else waits.
          --tls                    Speak TLS (1.2 or 1.3) only. Without --tls-cert, a self-signed
                                   certificate is made on first start in DIR/tls/ and its SHA-256
                                   fingerprint printed: clients pin it with --fingerprint, or
                                   trust cert.pem with --ca. Suites: TLS 1.3's AES-128-GCM,
                                   AES-256-GCM and ChaCha20-Poly1305; TLS 1.2's ECDHE-ECDSA and
                                   ECDHE-RSA with AES-128-GCM, AES-256-GCM or ChaCha20-Poly1305
                                   (AEAD only: no CBC, no SHA-1).
          --tls-cert FILE          PEM certificate (chain) to serve; implies --tls.
          --tls-key FILE           Its PEM private key.
          --plain-listen ADDR:PORT Also listen in plaintext there (a loopback address only).
          --metrics-listen ADDR:PORT
                                   Answer GET /metrics there (Prometheus text: connections,
                                   changes and commits, queued writes, fan-out lag in bytes,
                                   logins). No login: keep it on loopback or a private network.
          --http-listen ADDR:PORT  Serve the HTTP/JSON API and the web console there (HTTPS with
                                   --tls, same certificate); see Protocol/HTTP.md.
          --port-file FILE         Write the bound port to FILE once listening (and the HTTP
                                   port to FILE.http).
          --quiet                  Log errors only.
          --log-format text|json   One line a record on stderr: `time level event key=value…`
                                   (default) or one JSON object (connections, logins and failed
                                   logins with the address, grants, disconnects and errors).
          -h, --help               Show this help.
        """

    static let valueOptions: Set<String> = [
        "listen", "data", "idle-timeout", "tombstone-ttl", "history-days", "sqlite-cache-mb", "sqlite-mmap-mb", "port-file", "max-pending-output", "max-connections",
        "max-unauthenticated", "preauth-timeout", "max-collections-per-user", "max-bytes-per-user",
        "max-buffered-bytes", "socket-send-buffer", "tls-cert", "tls-key", "plain-listen", "log-format", "metrics-listen", "config", "store",
        "store-timeout", "http-listen", "password-iterations",
        // Taken and ignored (with a warning), so a config file written for an earlier release still starts.
        "version-min-age",
    ]
    static let flagOptions: Set<String> = ["quiet", "tls", "invitations-make-accounts"]

    static func run(_ arguments: [String]) throws {
        // The config file's options go first, so the command line's win.
        let config = try ConfigFile.find(try Arguments(arguments, valueOptions: valueOptions, flagOptions: flagOptions))
        let options = try Arguments((config?.arguments ?? []) + arguments, valueOptions: valueOptions, flagOptions: flagOptions)
        guard options.positionals.isEmpty else { throw UsageError("unexpected argument '\(options.positionals[0])'") }
        var configuration = ServerConfiguration()
        if let listen = options.value("listen") {
            guard let address = SocketAddress(parsing: listen) else { throw UsageError("--listen must be ADDR:PORT, e.g. 127.0.0.1:7420") }
            configuration.listen = address
        }
        configuration.dataPath = DataLocation(options, config: config).path
        configuration.idleTimeoutSeconds = UInt64(try options.integer("idle-timeout", default: 300, range: 0...31_536_000))
        configuration.tombstoneTTLSeconds = UInt64(try options.integer("tombstone-ttl", default: 30 * 86_400, range: 0...3_153_600_000))
        configuration.historySeconds = 86_400 * UInt64(try options.integer("history-days", default: 30, range: 0...36_500))
        if options.value("version-min-age") != nil {
            ServerLog.error("warning: --version-min-age is no longer used: every change is kept in the change log (see --history-days)")
        }
        configuration.limits.maxPendingOutputBytes = try options.integer(
            "max-pending-output", default: configuration.limits.maxPendingOutputBytes, range: 4096...(1 << 34))
        configuration.maxConnections = try options.integer("max-connections", default: configuration.maxConnections, range: 1...1_000_000)
        configuration.maxUnauthenticated = try options.integer(
            "max-unauthenticated", default: configuration.maxUnauthenticated, range: 1...1_000_000)
        configuration.preAuthTimeoutSeconds = UInt64(try options.integer("preauth-timeout", default: 10, range: 0...86_400))
        configuration.maxCollectionsPerUser = try options.integer(
            "max-collections-per-user", default: configuration.maxCollectionsPerUser, range: 0...100_000_000)
        configuration.maxBytesPerUser = try options.integer("max-bytes-per-user", default: 0, range: 0...(1 << 50))
        configuration.invitationsMakeAccounts = options.flag("invitations-make-accounts")
        configuration.passwordIterations = try options.integer(
            "password-iterations", default: PasswordHasher.defaultIterations, range: PasswordHasher.minimumIterations...100_000_000)
        configuration.maxBufferedBytes = try options.integer(
            "max-buffered-bytes", default: configuration.maxBufferedBytes, range: (1 << 20)...(1 << 40))
        configuration.socketSendBufferBytes = try options.integer(
            "socket-send-buffer", default: configuration.socketSendBufferBytes, range: 0...(1 << 30))
        configuration.storeTimeoutMilliseconds = 1000 * UInt64(try options.integer("store-timeout", default: 5, range: 1...3600))
        ServerLog.quiet = options.flag("quiet")
        if let format = options.value("log-format") {
            guard let chosen = ServerLog.Format(rawValue: format) else { throw UsageError("--log-format is text or json") }
            ServerLog.format = chosen
        }
        // Whatever SQLite or we create in the data folder is the owner's alone.
        umask(0o077)

        try configureTLS(options, &configuration)
        if let http = options.value("http-listen") {
            guard let address = SocketAddress(parsing: http) else { throw UsageError("--http-listen must be ADDR:PORT") }
            configuration.httpListen = address
        }
        if let metrics = options.value("metrics-listen") {
            guard let address = SocketAddress(parsing: metrics) else { throw UsageError("--metrics-listen must be ADDR:PORT") }
            configuration.metricsListen = address
        }

        // Each client is a file descriptor; the soft default (1024) is far below what one loop serves.
        OpenFileLimit.raiseToMaximum()
        let loop = EventLoop()
        let server: Server
        do {
            let tuning = SQLiteTuning(cacheMiB: try options.integer("sqlite-cache-mb", default: SQLiteTuning.defaultCacheMiB, range: 1...65_536),
                                      mmapMiB: try options.integer("sqlite-mmap-mb", default: 0, range: 0...1_048_576))
            let store = try openStore(options.value("store"), dataPath: configuration.dataPath, tuning: tuning, loop: loop)
            server = try Server(configuration: configuration, store: store, loop: loop) { core in HTTPFront(core: core, tls: configuration.tls) }
            try server.start()
        } catch let error as LoopError where error.isAddressInUse {
            let addresses = ([configuration.listen] + (configuration.httpListen.map { [$0] } ?? [])).map(\.description).joined(separator: " or ")
            throw RuntimeError("\(addresses) is already in use; is another server running? (--listen and --http-listen pick others)")
        } catch {
            throw RuntimeError("cannot start: \(error)")
        }
        if let portFile = options.value("port-file"), let port = server.boundAddress?.port {
            // The HTTP port first: a reader that waits for FILE finds FILE.http written.
            if let httpPort = server.httpAddress?.port {
                try? "\(httpPort)\n".write(toFile: portFile + ".http", atomically: true, encoding: .utf8)
            }
            try? "\(port)\n".write(toFile: portFile, atomically: true, encoding: .utf8)
        }
        loop.run()
        loop.close()
        ServerLog.info("stopped")
    }

    /// The data folder's SQLite store, or the PostgreSQL database `--store` names.
    private static func openStore(_ url: String?, dataPath: String, tuning: SQLiteTuning, loop: EventLoop) throws -> ServerStore {
        guard let url else {
            var folder = DataFolder(path: dataPath)
            folder.tuning = tuning
            let store = try SQLiteServerStore(folder: folder)
            for problem in store.permissionProblems { ServerLog.error("warning: \(problem)") }
            return store
        }
        guard StoreURL.isPostgres(url) else { throw UsageError("--store takes a postgresql:// URL") }
        let shown = PostgresServerStore.redacted(url)
        ServerLog.info("connecting to the PostgreSQL database \(shown)")
        do {
            return try PostgresServerStore(url: url, loop: loop)
        } catch {
            let wait = "a connect waits \(PGConnection.defaultConnectTimeoutSeconds) s unless the URL sets ?connect_timeout=N"
            throw RuntimeError("cannot use the PostgreSQL database \(shown): \(error) (\(wait))")
        }
    }

    /// `--tls`, `--tls-cert`/`--tls-key` and `--plain-listen`; makes the self-signed
    /// certificate on first use and prints the fingerprint clients pin.
    private static func configureTLS(_ options: Arguments, _ configuration: inout ServerConfiguration) throws {
        if let plain = options.value("plain-listen") {
            guard let address = SocketAddress(parsing: plain), address.isLoopback else {
                throw UsageError("--plain-listen must be a loopback ADDR:PORT (127.0.0.1 or ::1): passwords would cross the network in clear")
            }
            configuration.plaintextListen = address
        }
        let certificate = options.value("tls-cert")
        guard certificate != nil || options.flag("tls") else {
            guard configuration.plaintextListen == nil else { throw UsageError("--plain-listen goes with --tls") }
            return
        }
        guard (certificate == nil) == (options.value("tls-key") == nil) else { throw UsageError("--tls-cert and --tls-key go together") }
        var certificatePath = certificate ?? ""
        var keyPath = options.value("tls-key") ?? ""
        if certificate == nil {
            let folder = configuration.dataPath + "/tls"
            (certificatePath, keyPath) = (folder + "/cert.pem", folder + "/key.pem")
            if !FileManager.default.fileExists(atPath: certificatePath) {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                do {
                    try SelfSigned.make(certificate: certificatePath, key: keyPath, name: ProcessInfo.processInfo.hostName)
                } catch {
                    throw RuntimeError("cannot make a TLS certificate in \(folder): \(error)")
                }
                ServerLog.info("made a self-signed TLS certificate: \(certificatePath)")
            }
        }
        do {
            configuration.tls = try TLSContext.server(certificate: certificatePath, key: keyPath)
        } catch {
            throw RuntimeError("cannot use \(certificatePath) and \(keyPath) for TLS: \(error)")
        }
        let fingerprint = Fingerprint.ofCertificate(at: certificatePath)
        configuration.certificateFingerprint = fingerprint.flatMap(Fingerprint.normalized)
        ServerLog.info("TLS certificate SHA-256 fingerprint \(fingerprint ?? "unknown")")
    }
}
