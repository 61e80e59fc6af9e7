import CLibPQ
import Glibc

/// libpq, loaded when the first PostgreSQL connection is made instead of when the program
/// starts: a server on SQLite, an agent and the command line never map it, nor what it pulls in
/// (Kerberos, LDAP, GnuTLS: some 3 MiB of an idle agent's memory). The types and constants come
/// from the `CLibPQ` system-library target's header; the functions from `dlsym`.
struct LibPQ {
    typealias Connection = OpaquePointer
    typealias Result = OpaquePointer
    typealias CStrings = UnsafePointer<UnsafePointer<CChar>?>

    let connectdbParams: @convention(c) (CStrings?, CStrings?, Int32) -> Connection?
    let status: @convention(c) (Connection?) -> ConnStatusType
    let errorMessage: @convention(c) (Connection?) -> UnsafeMutablePointer<CChar>?
    let finish: @convention(c) (Connection?) -> Void
    let socket: @convention(c) (Connection?) -> Int32
    let reset: @convention(c) (Connection?) -> Void
    let exec: @convention(c) (Connection?, UnsafePointer<CChar>?) -> Result?
    let prepare: @convention(c) (Connection?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32, UnsafePointer<Oid>?) -> Result?
    let execPrepared: @convention(c) (Connection?, UnsafePointer<CChar>?, Int32, CStrings?, UnsafePointer<Int32>?, UnsafePointer<Int32>?, Int32) -> Result?
    let consumeInput: @convention(c) (Connection?) -> Int32
    let notifies: @convention(c) (Connection?) -> UnsafeMutablePointer<PGnotify>?
    let freemem: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let clear: @convention(c) (Result?) -> Void
    let resultStatus: @convention(c) (Result?) -> ExecStatusType
    let resultErrorField: @convention(c) (Result?, Int32) -> UnsafeMutablePointer<CChar>?
    let resultErrorMessage: @convention(c) (Result?) -> UnsafeMutablePointer<CChar>?
    let ntuples: @convention(c) (Result?) -> Int32
    let nfields: @convention(c) (Result?) -> Int32
    let getvalue: @convention(c) (Result?, Int32, Int32) -> UnsafeMutablePointer<CChar>
    let getisnull: @convention(c) (Result?, Int32, Int32) -> Int32
    let cmdTuples: @convention(c) (Result?) -> UnsafeMutablePointer<CChar>

    /// The library's soname on Debian and Ubuntu (package `libpq5`).
    static let soname = "libpq.so.5"

    /// Loaded once, by whichever thread connects first.
    static let loaded: Swift.Result<LibPQ, PGError> = load()

    /// The library, or the error a connection reports when it cannot be loaded.
    static func get() throws(PGError) -> LibPQ { try loaded.get() }

    private static func load() -> Swift.Result<LibPQ, PGError> {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(PGError(sqlState: nil, message: "cannot load \(soname), the PostgreSQL client library (apt-get install libpq5): \(reason)", connectionLost: true))
        }
        return Swift.Result { () throws(PGError) in try LibPQ(handle: handle) }
    }

    /// Each function by its name; the types are the properties' (libpq-fe.h's signatures).
    private init(handle: UnsafeMutableRawPointer) throws(PGError) {
        func symbol<Function>(_ name: String) throws(PGError) -> Function {
            guard let address = dlsym(handle, name) else {
                throw PGError(sqlState: nil, message: "\(LibPQ.soname) lacks \(name)", connectionLost: true)
            }
            return unsafeBitCast(address, to: Function.self)
        }
        connectdbParams = try symbol("PQconnectdbParams")
        status = try symbol("PQstatus")
        errorMessage = try symbol("PQerrorMessage")
        finish = try symbol("PQfinish")
        socket = try symbol("PQsocket")
        reset = try symbol("PQreset")
        exec = try symbol("PQexec")
        prepare = try symbol("PQprepare")
        execPrepared = try symbol("PQexecPrepared")
        consumeInput = try symbol("PQconsumeInput")
        notifies = try symbol("PQnotifies")
        freemem = try symbol("PQfreemem")
        clear = try symbol("PQclear")
        resultStatus = try symbol("PQresultStatus")
        resultErrorField = try symbol("PQresultErrorField")
        resultErrorMessage = try symbol("PQresultErrorMessage")
        ntuples = try symbol("PQntuples")
        nfields = try symbol("PQnfields")
        getvalue = try symbol("PQgetvalue")
        getisnull = try symbol("PQgetisnull")
        cmdTuples = try symbol("PQcmdTuples")
    }
}
