import ServerKit
import HTTPKit

/// The web console's files, compiled into the binary from Sources/ServerHTTP/Console: served
/// at `/` under a Content-Security-Policy that allows only the server's own scripts and
/// styles (no inline script, no other origin).
enum ConsoleFiles {
    /// Only this server's own files: the service worker and the manifest are named (`worker-src`,
    /// `manifest-src`) rather than left to fall back to `default-src 'none'`.
    static let policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "worker-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    static func response(for request: HTTPRequest, path: [String]) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return APIResponse.error(status: 405, code: "METHOD_NOT_ALLOWED", message: "the console's files are read with GET", headers: [HTTPHeader("Allow", "GET, HEAD")])
        }
        // An invitation's link opens the console's page (its script reads the #fragment).
        let name = path.isEmpty || path == ["join"] ? "index.html" : path.joined(separator: "/")
        guard let file = files[name] else {
            return HTTPResponse(status: 404, contentType: "text/plain; charset=utf-8", text: "not found\n")
        }
        // `no-cache` makes a browser ask again each time; the tag lets the answer be a 304.
        let validation = [HTTPHeader("Cache-Control", "no-cache"), HTTPHeader("ETag", file.entityTag)]
        if let asked = request.header("If-None-Match"), asked.split(separator: ",").contains(where: { $0.trimming(" ") == file.entityTag }) {
            return HTTPResponse(status: 304, headers: validation)
        }
        return HTTPResponse(status: 200, headers: [
            HTTPHeader("Content-Type", file.type), HTTPHeader("Content-Security-Policy", policy),
            HTTPHeader("X-Content-Type-Options", "nosniff"), HTTPHeader("Referrer-Policy", "no-referrer"),
        ] + validation, body: file.body)
    }

    /// A compiled-in file: its bytes, its media type, and its strong validator (the bytes'
    /// 64-bit FNV-1a hash: the files change only with a new build).
    struct File {
        let body: [UInt8]
        let type: String
        let entityTag: String

        init(_ body: [UInt8], _ type: String) {
            self.body = body
            self.type = type
            let hash = body.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
            entityTag = "\"" + String(hash, radix: 16) + "\""
        }
    }

    private static let script = "text/javascript; charset=utf-8"

    /// Every file by the name it is served under.
    static let files: [String: File] = [
        "index.html": File(PackageResources.index_html, "text/html; charset=utf-8"),
        "style.css": File(PackageResources.style_css, "text/css; charset=utf-8"),
        "app.js": File(PackageResources.app_js, script), "api.js": File(PackageResources.api_js, script),
        "values.js": File(PackageResources.values_js, script), "records.js": File(PackageResources.records_js, script),
        "views.js": File(PackageResources.views_js, script), "dom.js": File(PackageResources.dom_js, script),
        "columns.js": File(PackageResources.columns_js, script), "collections.js": File(PackageResources.collections_js, script),
        "dialogs.js": File(PackageResources.dialogs_js, script), "merge.js": File(PackageResources.merge_js, script),
        "replica.js": File(PackageResources.replica_js, script), "sw.js": File(PackageResources.sw_js, script),
        "outbox.js": File(PackageResources.outbox_js, script), "synced.js": File(PackageResources.synced_js, script),
        "team.js": File(PackageResources.team_js, script), "qr.js": File(PackageResources.qr_js, script),
        "activity.js": File(PackageResources.activity_js, script),
        "sdk/plistsync.js": File(PackageResources.sdk_js, script),
        "manifest.webmanifest": File(PackageResources.manifest_webmanifest, "application/manifest+json"),
        "icon-192.png": File(PackageResources.icon_192_png, "image/png"), "icon-512.png": File(PackageResources.icon_512_png, "image/png"),
    ]
}
