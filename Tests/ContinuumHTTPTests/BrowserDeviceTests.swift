import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Crypto
import Foundation
import Hummingbird
import Testing

/// A browser linked as a device of the node's account (Docs/API.md, "Linked browsers"), in-process: the browser's
/// side is played here with swift-crypto keys the test holds, as a phone's WebCrypto keys would be.
@Suite("Linked browsers: a phone signs as its person, with its own keys, and has no owner's powers")
struct BrowserDeviceTests {
    /// A browser the test plays: its device key, and its log key in the group once declared.
    struct Browser {
        let device = NodeIdentity.generate()
        let log = NodeIdentity.generate()
        var token = ""
        var headers: HTTPFields { [.authorization: "Browser \(token)"] }

        func sign(_ body: RecordBody, by key: NodeIdentity, after previous: VerifiedRecord?) throws -> VerifiedRecord {
            try key.sign(
                RecordContent(
                    author: key.author,
                    sequence: (previous?.header.sequence ?? 0) + 1,
                    previous: previous?.id,
                    createdAt: .now(),
                    body: body
                )
            )
        }
    }

    struct Linked {
        var browser: Browser
        let account: AccountID
        let group: GroupID
        let joining: VerifiedRecord
    }

    static func encoded(_ record: VerifiedRecord) -> String { Data(record.bytes).base64URL }

    /// `POST /api/browser/records` with `record`, as `browser`.
    static func submit(
        _ record: VerifiedRecord,
        as browser: Browser,
        to api: InProcessAPI
    ) async throws
        -> InProcessResponse
    {
        try await api.send(.post, "/api/browser/records", json: ["record": encoded(record)], headers: browser.headers)
    }

    /// Alice's node in a group "Party", and a browser linked to her account through a link code.
    static func link(_ api: InProcessAPI) async throws -> Linked {
        try await api.actions.setName("Alice", by: api.node.identity)
        // As `run` does at start (the node is not started here).
        _ = try await api.store.foundAccount(by: api.node.identity, recovery: nil)
        let group = try await api.actions.createGroup(name: "Party", open: false, by: api.node.identity)
        let account = try #require(try await api.store.account(of: api.node.identity.author)?.account)
        let made = try await api.send(.post, "/api/browser/link", json: [:])
        #expect(made.status == 201, "\(made.text)")
        let url = try #require(made.object["url"] as? String)
        let code = try #require(made.object["code"] as? String)
        #expect(url == "http://127.0.0.1:7421/#link=\(code)")
        #expect((made.object["qrSvg"] as? String)?.hasPrefix("<svg") == true)
        let inspected = try await api.send(.post, "/api/browser/link/inspect", json: ["code": code])
        #expect(inspected.object["account"] as? String == account.hex && inspected.object["name"] as? String == "Alice")
        var browser = Browser()
        let joining = try browser.sign(AccountRecord.joining(account).body, by: browser.device, after: nil)
        let accepted = try await api.send(
            .post,
            "/api/browser/link/accept",
            json: [
                "code": code, "device": browser.device.author.hex,
                "consent": try browser.device.consent(toJoin: account).base64URL, "record": encoded(joining),
            ]
        )
        #expect(accepted.status == 201, "\(accepted.text)")
        let cookie = try #require(accepted.headers[.setCookie])
        #expect(cookie.hasPrefix("continuum-browser-7421=") && cookie.contains("HttpOnly"), "\(cookie)")
        browser.token = String(cookie.dropFirst("continuum-browser-7421=".count).prefix { $0 != ";" })
        return Linked(browser: browser, account: account, group: group, joining: joining)
    }

    /// Declares the browser's log in the group and signs its name there: the two records a phone sends first.
    static func declare(_ linked: Linked, _ api: InProcessAPI) async throws -> VerifiedRecord {
        let browser = linked.browser
        let declaration = try browser.sign(
            AccountRecord.logDeclaration(
                account: linked.account,
                group: linked.group,
                log: browser.log.author,
                signature: try browser.log.declaration(
                    account: linked.account,
                    group: linked.group,
                    device: browser.device.author
                )
            ).body,
            by: browser.device,
            after: linked.joining
        )
        let declared = try await Self.submit(declaration, as: browser, to: api)
        #expect(declared.status == 201, "\(declared.text)")
        let profile = try browser.sign(.profile(name: "Alice"), by: browser.log, after: nil)
        let named = try await Self.submit(profile, as: browser, to: api)
        #expect(named.status == 201, "\(named.text)")
        return profile
    }

    @Test("a linked browser signs its posts and comments itself; they are Alice's, and no key of it is stored")
    func browserSignsAsItsPerson() async throws {
        try await InProcessAPI.with { api in
            let linked = try await Self.link(api)
            let browser = linked.browser
            let me = try await api.get("/api/browser/me", headers: browser.headers)
            #expect(me.object["device"] as? String == browser.device.author.hex, "\(me.text)")
            let profile = try await Self.declare(linked, api)
            let groups = try #require(
                (try await api.get("/api/browser/me", headers: browser.headers)).object["groups"] as? [[String: Any]]
            )
            #expect(groups.map { $0["log"] as? String } == [browser.log.author.hex])
            let head = try await api.get("/api/browser/logs/\(browser.log.author.hex)", headers: browser.headers)
            #expect(head.object["sequence"] as? Int == 1 && head.object["head"] as? String == profile.id.hex)

            let staged = try await api.upload(
                "/api/browser/photos",
                fields: [("caption", "Lake from my phone"), ("location", "48.8566,2.3522")],
                files: [("photo", "lake.png", try BadInputTests.fixture("lake.png"))],
                headers: browser.headers
            )
            #expect(staged.status == 201, "\(staged.text)")
            let sha256 = try #require(staged.object["sha256"] as? String)
            let mediaType = try #require(staged.object["mediaType"] as? Int)
            let photo = PhotoReference(
                sha256: try #require(AssetHash(hex: sha256)),
                byteCount: UInt64(try #require(staged.object["bytes"] as? Int)),
                mediaType: try #require(MediaType(rawValue: UInt8(mediaType))),
                width: UInt32(try #require(staged.object["width"] as? Int)),
                height: UInt32(try #require(staged.object["height"] as? Int)),
                takenAt: nil,
                thumbnail: nil
            )
            #expect(photo.mediaType == .png && staged.object["latitudeE7"] as? Int == 488_566_000)
            let post = try browser.sign(
                .post(
                    caption: "Lake from my phone",
                    photo: photo,
                    location: Coordinate(latitudeE7: 488_566_000, longitudeE7: 23_522_000)
                ),
                by: browser.log,
                after: profile
            )
            let sent = try await Self.submit(post, as: browser, to: api)
            #expect(sent.status == 201 && sent.object["id"] as? String == post.id.hex, "\(sent.text)")
            let shown = try await api.get("/api/posts/\(post.id.hex)")
            #expect(shown.object["author"] as? String == browser.log.author.hex, "\(shown.text)")
            #expect(shown.object["authorName"] as? String == "Alice")
            #expect(shown.object["account"] as? String == linked.account.hex)
            #expect((shown.object["photo"] as? [String: Any])?["available"] as? Bool == true, "\(shown.text)")
            let comment = try browser.sign(
                .comment(post: PostID(post.id), text: "so calm"),
                by: browser.log,
                after: post
            )
            let commented = try await Self.submit(comment, as: browser, to: api)
            #expect(commented.status == 201, "\(commented.text)")
            // Sent twice (a retry after a lost answer): stored once, answered the same.
            let again = try await Self.submit(comment, as: browser, to: api)
            #expect(again.status == 201)
            let devices = try await api.store.devices(of: api.node.identity).devices.map(\.id)
            #expect(devices.contains(browser.device.author))
            // The node holds the browser's public keys and records, never a private key of it.
            for secret in [browser.device, browser.log].map({ Data($0.privateKey.rawRepresentation) }) {
                #expect(try Self.filesContaining(secret, under: api.photos.deletingLastPathComponent()).isEmpty)
            }
        }
    }

    /// The files under `root` whose bytes contain `needle`.
    static func filesContaining(_ needle: Data, under root: URL) throws -> [String] {
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        var found: [String] = []
        while let url = walker?.nextObject() as? URL {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            if try Data(contentsOf: url).range(of: needle) != nil { found.append(url.path) }
        }
        return found
    }

    @Test("a linked browser gets 403 for the owner's powers and for records not its own; nothing changes")
    func browserHasNoOwnerPowers() async throws {
        try await InProcessAPI.with { api in
            let linked = try await Self.link(api)
            let browser = linked.browser
            let profile = try await Self.declare(linked, api)
            let ownPost = try await api.actions.post(
                NewPost(
                    photo: .file(
                        NodeBinary.fixtures.appendingPathComponent("lake.png"),
                        contents: try BadInputTests.fixture("lake.png")
                    ),
                    caption: "the node's own",
                    group: linked.group
                ),
                by: api.node.identity
            )
            let own = try await api.actions.comment(on: ownPost, text: "mine", by: api.node.identity)
            // Bob's post, come from a peer: the browser's account does not own it.
            var bob = RecordFactory(authorCount: 1, seed: 7)
            let bobs = bob.post(by: 0)
            _ = try await api.store.ingest(bob.records)
            let before = api.store.writeStamp()
            let owner: [(HTTPRequest.Method, String, Any)] = [
                (.get, "/api/phone", [:]), (.put, "/api/name", ["name": "Gina"]),
                (.post, "/api/groups/\(linked.group.hex)/invites", [:]), (.post, "/api/browser/link", [:]),
                (.post, "/api/devices/link", [:]), (.delete, "/api/devices/\(api.node.identity.author.hex)", [:]),
                (.delete, "/api/posts/\(ownPost.hex)", [:]),
                (.post, "/api/posts/\(ownPost.hex)/comments", ["text": "x"]),
                (.put, "/api/posts/\(ownPost.hex)/reaction", ["reaction": "heart"]), (.get, "/api/requests", [:]),
                (.put, "/api/authors/\(api.node.identity.author.hex)/block", [:]), (.get, "/api/peers", [:]),
                (.delete, "/api/groups/\(linked.group.hex)/members/\(browser.log.author.hex)", [:]),
            ]
            for (method, path, body) in owner {
                let answer =
                    method == .get
                    ? try await api.get(path, headers: browser.headers)
                    : try await api.send(method, path, json: body, headers: browser.headers)
                answer.expectRefusal(status: 403, code: "owner_only", message: "the node", of: "\(method) \(path)")
            }
            let stranger = NodeIdentity.generate()
            let refused: [(String, VerifiedRecord, Int, String)] = [
                (
                    "another key's record", try browser.sign(.profile(name: "Eve"), by: stranger, after: nil), 403,
                    "not one this device declared"
                ),
                (
                    "a second record at the profile's place",
                    try browser.sign(.profile(name: "Bob"), by: browser.log, after: nil),
                    409, "has moved on"
                ),
                (
                    "an edit of Bob's post",
                    try browser.sign(
                        .edit(post: PostID(bobs.id), change: PostChange(caption: "mine now")),
                        by: browser.log,
                        after: profile
                    ),
                    403, "belongs to someone else"
                ),
                (
                    "a device-remove of the node",
                    try browser.sign(
                        AccountRecord.deviceRemove(
                            account: linked.account,
                            device: api.node.identity.author,
                            frontier: []
                        ).body,
                        by: browser.device,
                        after: linked.joining
                    ), 403, "for the node's owner"
                ),
            ]
            let codes = [403: "not_yours", 409: "stale_log", 422: "record_refused"]
            for (what, record, status, words) in refused {
                let answer = try await Self.submit(record, as: browser, to: api)
                answer.expectRefusal(status: status, code: codes[status] ?? "", message: words, of: what)
            }
            #expect(api.store.writeStamp() == before, "a refused request changed the store")
            #expect(try await api.store.post(ownPost, viewer: nil)?.comments.map(\.id) == [own])

            // The owner removes the browser's device: its session ends at its next request.
            let removed = try await api.request(.delete, "/api/devices/\(browser.device.author.hex)")
            #expect(removed.status == 200, "\(removed.text)")
            let after = try await api.get("/api/browser/me", headers: browser.headers)
            after.expectRefusal(status: 401, code: "device_removed", message: "removed", of: "after removal")
        }
    }

    @Test(
        "a browser proves its key for a new session; a stranger's signature is refused; without a session the API is closed"
    )
    func sessionsNeedTheKey() async throws {
        try await InProcessAPI.with { api in
            let linked = try await Self.link(api)
            let device = linked.browser.device
            let asked = try await api.send(.post, "/api/browser/challenge", json: ["device": device.author.hex])
            let nonce = try #require((asked.object["nonce"] as? String).flatMap { Data(base64URL: $0) })
            let message = Data("continuum-web-session-v1".utf8) + nonce + device.author.bytes
            let wrong = try NodeIdentity.generate().privateKey.signature(for: message)
            let refused = try await api.send(
                .post,
                "/api/browser/session",
                json: ["device": device.author.hex, "nonce": nonce.base64URL, "signature": wrong.base64URL]
            )
            refused.expectRefusal(
                status: 401,
                code: "bad_signature",
                message: "signature",
                of: "a stranger's signature"
            )
            let again = try await api.send(.post, "/api/browser/challenge", json: ["device": device.author.hex])
            let fresh = try #require((again.object["nonce"] as? String).flatMap { Data(base64URL: $0) })
            let signed = try device.privateKey.signature(
                for: Data("continuum-web-session-v1".utf8) + fresh + device.author.bytes
            )
            let opened = try await api.send(
                .post,
                "/api/browser/session",
                json: ["device": device.author.hex, "nonce": fresh.base64URL, "signature": signed.base64URL]
            )
            #expect(opened.status == 200, "\(opened.text)")
            #expect(opened.headers[.setCookie]?.hasPrefix("continuum-browser-7421=") == true)
            // Without a session or the token (a token is set here), the API is closed and the page's files are not.
            var withToken = APIConfiguration()
            withToken.token = "owner-token-0123456789"
            try await InProcessAPI.with(withToken) { closed in
                let status = try await closed.get("/api/status")
                status.expectRefusal(status: 401, code: "unauthorized", message: "token", of: "status without a token")
                #expect(try await closed.get("/").status == 200)
            }
        }
    }
}
