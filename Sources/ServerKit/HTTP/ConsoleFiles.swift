import HTTPKit

/// The web console's files, compiled into the binary from Sources/ServerKit/Console: served
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
        let name = path.isEmpty ? "index.html" : path.joined(separator: "/")
        guard let (body, type) = file(name), let tag = entityTags[name] else {
            return HTTPResponse(status: 404, contentType: "text/plain; charset=utf-8", text: "not found\n")
        }
        // `no-cache` makes a browser ask again each time; the tag lets the answer be a 304.
        let validation = [HTTPHeader("Cache-Control", "no-cache"), HTTPHeader("ETag", tag)]
        if let asked = request.header("If-None-Match"), asked.split(separator: ",").contains(where: { $0.trimming(" ") == tag }) {
            return HTTPResponse(status: 304, headers: validation)
        }
        return HTTPResponse(status: 200, headers: [
            HTTPHeader("Content-Type", type), HTTPHeader("Content-Security-Policy", policy),
            HTTPHeader("X-Content-Type-Options", "nosniff"), HTTPHeader("Referrer-Policy", "no-referrer"),
        ] + validation, body: body)
    }

    static let names = ["index.html", "app.js", "api.js", "values.js", "records.js", "views.js", "dom.js", "columns.js", "collections.js", "dialogs.js", "merge.js", "replica.js", "style.css",
                        "sw.js", "manifest.webmanifest", "icon-192.png", "icon-512.png"]

    /// Each file's strong validator: its bytes' 64-bit FNV-1a hash, made once (the files are
    /// compiled in, so a new build is the only way they change).
    static let entityTags: [String: String] = Dictionary(uniqueKeysWithValues: names.compactMap { name in
        file(name).map { body, _ in
            let hash = body.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
            return (name, "\"" + String(hash, radix: 16) + "\"")
        }
    })

    static func file(_ name: String) -> ([UInt8], String)? {
        switch name {
        case "index.html": (PackageResources.index_html, "text/html; charset=utf-8")
        case "app.js": (PackageResources.app_js, "text/javascript; charset=utf-8")
        case "api.js": (PackageResources.api_js, "text/javascript; charset=utf-8")
        case "values.js": (PackageResources.values_js, "text/javascript; charset=utf-8")
        case "records.js": (PackageResources.records_js, "text/javascript; charset=utf-8")
        case "views.js": (PackageResources.views_js, "text/javascript; charset=utf-8")
        case "dom.js": (PackageResources.dom_js, "text/javascript; charset=utf-8")
        case "columns.js": (PackageResources.columns_js, "text/javascript; charset=utf-8")
        case "collections.js": (PackageResources.collections_js, "text/javascript; charset=utf-8")
        case "dialogs.js": (PackageResources.dialogs_js, "text/javascript; charset=utf-8")
        case "merge.js": (PackageResources.merge_js, "text/javascript; charset=utf-8")
        case "replica.js": (PackageResources.replica_js, "text/javascript; charset=utf-8")
        case "sw.js": (PackageResources.sw_js, "text/javascript; charset=utf-8")
        case "manifest.webmanifest": (PackageResources.manifest_webmanifest, "application/manifest+json")
        case "icon-192.png": (PackageResources.icon_192_png, "image/png")
        case "icon-512.png": (PackageResources.icon_512_png, "image/png")
        case "style.css": (PackageResources.style_css, "text/css; charset=utf-8")
        default: nil
        }
    }
}
