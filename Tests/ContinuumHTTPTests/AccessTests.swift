import ContinuumHTTP
import Foundation
import Hummingbird
import Testing

/// The access rules of Docs/API.md, in-process (``InProcessAPI``): the token when one is set (header, address,
/// cookie); without one, loopback `Host` names only; no write from another web origin.
@Suite("HTTP API: the token, the Host and the Origin")
struct AccessTests {
    static let token = "s3cret-token-0123456789"

    /// A refusal: its status and code, a JSON error body whose message mentions `words`.
    func expectRefused(
        _ response: InProcessResponse,
        _ status: Int,
        _ code: String,
        mentioning words: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.errorCode == code, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.errorMessage.contains(words), "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.contentType == "application/json; charset=utf-8", sourceLocation: sourceLocation)
    }

    @Test func aTokenIsRequiredWhenSet() async throws {
        var configuration = APIConfiguration()
        configuration.token = Self.token
        try await InProcessAPI.with(configuration) { api in
            let token = Self.token
            expectRefused(try await api.get("/api/status"), 401, "unauthorized", mentioning: "Bearer <token>")
            let wrong = try await api.get("/api/status", headers: [.authorization: "Bearer nope-nope-nope-nope"])
            expectRefused(wrong, 401, "unauthorized", mentioning: "?token=")
            #expect(try await api.get("/api/status", headers: [.authorization: "Bearer \(token)"]).status == 200)
            // The cookie is named for the port: a browser sends a host's cookies to every port of it.
            #expect(try await api.get("/api/status", headers: [.cookie: "continuum-token-7421=\(token)"]).status == 200)
            #expect(try await api.get("/api/status", headers: [.cookie: "continuum-token=\(token)"]).status == 401)
            let viaQuery = try await api.get("/api/status?token=\(token)")
            #expect(viaQuery.status == 200)
            let cookie = try #require(viaQuery.headers[.setCookie])
            #expect(cookie.hasPrefix("continuum-token-7421=\(token)"), "\(cookie)")
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "\(cookie)")
            #expect(!cookie.contains("Secure"), "a cookie over plain HTTP: \(cookie)")
            // Already carrying the cookie: not set again.
            let again = try await api.get(
                "/api/status?token=\(token)",
                headers: [.cookie: "continuum-token-7421=\(token)"]
            )
            #expect(again.status == 200 && again.headers[.setCookie] == nil)
            // Opened as /?token=…, the page gets the cookie.
            let page = try await api.get("/?token=\(token)")
            #expect(page.status == 200)
            #expect(page.contentType?.hasPrefix("text/html") == true)
            #expect(page.headers[.setCookie]?.hasPrefix("continuum-token-7421=\(token)") == true)
            // The page's own files hold no data: served without the token, so that a phone opening a link can load
            // the page; no cookie is set for a token that is not this node's.
            let bare = try await api.get("/")
            #expect(bare.status == 200 && bare.headers[.setCookie] == nil)
            #expect(try await api.get("/?token=nope-nope-nope-nope").headers[.setCookie] == nil)
            // A stale cookie beside this node's own token in the address: let in. Only wrong tokens: refused.
            let stale: HTTPFields = [.cookie: "continuum-token-7421=an-old-token-of-this-node"]
            #expect(try await api.get("/api/status?token=\(token)", headers: stale).status == 200)
            expectRefused(
                try await api.get("/api/status?token=nope-nope-nope-nope", headers: stale),
                401,
                "unauthorized",
                mentioning: "token"
            )
            // With a token, the Host may be the machine's name on the LAN.
            #expect(try await api.get("/api/status?token=\(token)", host: "photos.lan:7421").status == 200)
            #expect(try await api.get("/api/status", host: "photos.lan:7421").status == 401)
        }
    }

    @Test func withoutATokenOnlyLoopbackHostNamesAreAnswered() async throws {
        try await InProcessAPI.with { api in
            for host in ["127.0.0.1:7421", "localhost:7421", "[::1]:7421", "127.0.0.2", "localhost"] {
                #expect(try await api.get("/api/status", host: host).status == 200, "\(host)")
            }
            for host in ["evil.example:80", "photos.lan:7421", "192.168.1.5:7421", "[fe80::1]:7421", "localhost.evil"] {
                let response = try await api.get("/api/status", host: host)
                expectRefused(response, 403, "bad_host", mentioning: "(the request was for '\(host)')")
            }
        }
    }

    @Test func aWriteFromAnotherOriginIsRefused() async throws {
        try await InProcessAPI.with { api in
            let name = Data(#"{"name":"Alice"}"#.utf8)
            for origin in ["http://evil.example", "http://127.0.0.1:8000", "https://127.0.0.1:7421", "null"] {
                let response = try await api.request(
                    .put,
                    "/api/name",
                    headers: [.origin: origin, .contentType: "application/json"],
                    body: name
                )
                expectRefused(response, 403, "bad_origin", mentioning: "a page from \(origin) may not change this node")
            }
            #expect(try await api.store.displayName(of: api.node.identity.author) == nil)
            // Reading from another origin is allowed (the browser keeps the answer from the page); so is a write from
            // the node's own web UI, and one without an Origin (curl).
            #expect(try await api.get("/api/status", headers: [.origin: "http://evil.example"]).status == 200)
            let own = try await api.request(
                .put,
                "/api/name",
                headers: [.origin: "http://127.0.0.1:7421", .contentType: "application/json"],
                body: name
            )
            #expect(own.status == 200, "\(own.text)")
            #expect(try await api.store.displayName(of: api.node.identity.author) == "Alice")
        }
    }
}
