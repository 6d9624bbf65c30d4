import ContinuumCore
import ContinuumStore
import Foundation
import Hummingbird

/// The access rules of Docs/API.md. A request that carries a linked browser's session is served with that device's
/// rights (``BrowserRights``), from any address. Otherwise the owner's: the token when one is set, else loopback
/// `Host` names only. The web UI's own files are served to anyone who may reach the API, so that a phone opening a
/// link can load the page; they hold no data. The few routes by which a browser links itself or opens a session
/// need neither (``BrowserRights/isOpen(_:_:)``). No state-changing request from another web origin, ever.
struct AccessMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String?
    /// `http`, or `https` under `--api-tls`: the web UI's own origin is `scheme://authority`.
    var scheme = "http"
    var sessions = BrowserSessions()
    /// Whether a session's device is still a device of its account; nil (no store): every session is.
    var stillDevice: (@Sendable (BrowserSession) async throws -> Bool)?

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let authority = request.head.authority ?? ""
        let safe: Set<HTTPRequest.Method> = [.get, .head, .options]
        if !safe.contains(request.method), let origin = request.headers[.origin], origin != "\(scheme)://\(authority)" {
            throw APIError(
                .forbidden,
                "bad_origin",
                "a page from \(origin) may not change this node; use the node's own web UI"
            )
        }
        let path = request.uri.path
        let isAPI = path == "/api" || path.hasPrefix("/api/")
        let presented = BrowserSessions.token(of: request)
        if let presented, let guest = await sessions.endedByRemoval(presented) {
            throw Self.removed(guest: guest)
        }
        if let presented, let session = await sessions.session(presented) {
            if let stillDevice, try await !stillDevice(session) {
                await sessions.end(device: session.device)
                throw Self.removed(guest: session.group != nil)
            }
            if isAPI { try BrowserRights.check(request.method, path, guest: session.group != nil) }
            return try await next(request, context)
        }
        let open = !isAPI && safe.contains(request.method) || BrowserRights.isOpen(request.method, path)
        if !open { try checkOwner(request, authority: authority) }
        let response = try await next(request, context)
        return withTokenCookie(response, request: request, authority: authority)
    }

    /// 401 `device_removed`: the session's browser was removed (a guest, or a device of the owner's account).
    static func removed(guest: Bool) -> APIError {
        APIError(
            .unauthorized,
            "device_removed",
            guest
                ? "the node's owner removed this guest from the group; nothing more is taken from it"
                : "this browser was removed from its account's devices; ask the node's owner for a new link"
        )
    }

    /// Throws unless the request is the owner's: it carries the token, or (no token set) names a loopback host.
    private func checkOwner(_ request: Request, authority: String) throws {
        if let token {
            guard Self.presentedTokens(request).contains(where: { Self.constantTimeEqual($0, token) }) else {
                throw APIError(
                    .unauthorized,
                    "unauthorized",
                    "this node's API needs its access token: open the address the node printed (with ?token=…), "
                        + "or send Authorization: Bearer <token>"
                )
            }
        } else {
            guard APIConfiguration.isLoopback(host: Self.hostName(authority)) else {
                throw APIError(
                    .forbidden,
                    "bad_host",
                    "this API answers only to localhost and 127.0.0.1 (the request was for '\(authority)')"
                )
            }
        }
    }

    /// Opened as /?token=… with this node's token: the response keeps the token in a cookie, so that the page's own
    /// files, images and event stream carry it without the token in every address.
    private func withTokenCookie(_ response: Response, request: Request, authority: String) -> Response {
        let cookie = Self.cookieName(authority)
        guard let token, let given = request.uri.queryParameters.get("token"),
            Self.constantTimeEqual(String(given), token), request.cookies[cookie]?.value != token
        else { return response }
        var response = response
        response.setCookie(
            Cookie(name: cookie, value: token, path: "/", secure: scheme == "https", httpOnly: true, sameSite: .strict)
        )
        return response
    }

    /// `host` of `host:port`, `[v6]:port` or a bare host.
    static func hostName(_ authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[authority.startIndex...end])
        }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
    }

    /// Every token the request presents: its bearer header, its `?token=`, its cookie. Any one that matches lets
    /// it in: a browser sends the cookie of another node on the same host (cookies are per host, not per port)
    /// beside the `?token=` of the address it opened.
    static func presentedTokens(_ request: Request) -> [String] {
        var tokens: [String] = []
        if let header = request.headers[.authorization], header.hasPrefix("Bearer ") {
            tokens.append(String(header.dropFirst("Bearer ".count)))
        }
        if let query = request.uri.queryParameters.get("token") { tokens.append(String(query)) }
        if let cookie = request.cookies[cookieName(request.head.authority ?? "")] { tokens.append(cookie.value) }
        return tokens
    }

    /// The token cookie's name for the address the browser opened: `continuum-token-7421`, one per port, since a
    /// browser sends a host's cookies to all its ports (two nodes on one machine would overwrite each other's);
    /// `continuum-token` for an address without a port.
    static func cookieName(_ authority: String) -> String {
        guard let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]"),
            let port = Int(authority[authority.index(after: colon)...])
        else { return "continuum-token" }
        return "continuum-token-\(port)"
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// What a linked browser (a phone of the owner's account) may ask of the API: to read what its account reads, and to
/// write what its account writes, signed by its own keys (`/api/browser/…`); its follows and notifications. None of
/// the node's administration: settings, name, invites, joins, approvals, members, devices, blocks, peers, the
/// token's address. A write that the node would sign with its own key (`POST /api/posts`, …) is refused too: the
/// browser signs its own.
enum BrowserRights {
    private static let reads: [[String]] = [
        ["status"], ["feed"], ["search"], ["places"], ["posts", "*"], ["photos", "*"], ["photos", "*", "thumbnail"],
        ["groups"], ["groups", "*", "members"], ["events"], ["notifications"], ["following"], ["openapi.json"],
        ["devices"], ["browser", "me"], ["browser", "logs", "*"],
    ]
    private static let writes: [(HTTPRequest.Method, [String])] = [
        (.post, ["photos", "inspect"]), (.post, ["photos", "*", "fetch"]), (.post, ["notifications", "read"]),
        (.put, ["posts", "*", "follow"]), (.delete, ["posts", "*", "follow"]),
        (.post, ["posts", "*", "follow", "toggle"]),
        (.post, ["browser", "photos"]), (.post, ["browser", "records"]), (.delete, ["browser", "session"]),
    ]
    /// The routes a browser uses before it has a session: linking itself with a code, and proving its key.
    private static let open: [(HTTPRequest.Method, [String])] = [
        (.post, ["browser", "link", "inspect"]), (.post, ["browser", "link", "accept"]),
        (.post, ["browser", "challenge"]), (.post, ["browser", "session"]),
        (.post, ["browser", "guest", "inspect"]), (.post, ["browser", "guest", "accept"]),
    ]

    /// The parts of an `/api/…` path after `api`.
    private static func parts(_ path: String) -> [String] {
        Array(path.split(separator: "/").dropFirst().map(String.init))
    }

    private static func matches(_ pattern: [String], _ parts: [String]) -> Bool {
        pattern.count == parts.count && zip(pattern, parts).allSatisfy { $0 == "*" || $0 == $1 }
    }

    /// Whether the route is one a browser uses without a session (it needs no token either).
    static func isOpen(_ method: HTTPRequest.Method, _ path: String) -> Bool {
        guard path.hasPrefix("/api/") else { return false }
        let parts = parts(path)
        return open.contains { $0.0 == method && matches($0.1, parts) }
    }

    /// What a guest may ask: to read its group's posts and photos (and hear of them: the event stream, filtered),
    /// and to write what it signs itself. Not its group's members, the node's other groups, follows or
    /// notifications.
    private static let guestReads: [[String]] = [
        ["feed"], ["search"], ["places"], ["posts", "*"], ["photos", "*"], ["photos", "*", "thumbnail"],
        ["browser", "me"], ["browser", "logs", "*"], ["events"],
    ]
    private static let guestWrites: [(HTTPRequest.Method, [String])] = [
        (.post, ["browser", "photos"]), (.post, ["browser", "records"]), (.delete, ["browser", "session"]),
    ]

    /// Throws 403 `owner_only` unless a linked browser (a guest's, with `guest`) may make this request.
    static func check(_ method: HTTPRequest.Method, _ path: String, guest: Bool = false) throws {
        let parts = parts(path)
        let (reads, writes) = guest ? (guestReads, guestWrites) : (reads, writes)
        if [.get, .head].contains(method), reads.contains(where: { matches($0, parts) }) { return }
        if writes.contains(where: { $0.0 == method && matches($0.1, parts) }) { return }
        if open.contains(where: { $0.0 == method && matches($0.1, parts) }) { return }
        if guest {
            throw APIError(
                .forbidden,
                "not_for_guests",
                "\(method) \(path) is not for a guest: a guest reads its group's posts and signs its own posts, "
                    + "comments and reactions; the node's settings, invites, members and token are its owner's"
            )
        }
        let signs = ["posts", "comments", "delete"].contains(parts.first ?? "") && method != .get
        throw APIError(
            .forbidden,
            "owner_only",
            signs
                ? "this browser signs its own posts, comments and reactions with its key (the web page does it); "
                    + "the node does not sign them for it"
                : "\(method) \(path) is for the node's owner: a linked browser cannot change settings, invites, "
                    + "members, devices or blocks, nor read the owner's token"
        )
    }
}
