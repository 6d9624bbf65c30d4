import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Hummingbird
import Testing

/// Guests (Docs/API.md, "Guests"), in-process: the guest's browser is played with swift-crypto keys the test holds,
/// as its WebCrypto keys would be. It founds its own account, the node's admin log adds its log to one group, and
/// its session sees and writes in that group alone.
@Suite("Guests: one scan, a name, and a guest posts as itself in one group, with none of the owner's powers")
struct GuestTests {
    typealias Browser = BrowserDeviceTests.Browser

    struct Guest {
        var browser: Browser
        let account: AccountID
        let profile: VerifiedRecord
        let declaration: VerifiedRecord
        let code: String
    }

    struct Party {
        let party: GroupID
        let family: GroupID
        let alicePartyPost: PostID
        let aliceFamilyPost: PostID
        let familyPhoto: AssetHash
    }

    /// Alice's node in two groups, "Party" and "Family", with a post of hers in each.
    static func party(_ api: InProcessAPI) async throws -> Party {
        try await api.actions.setName("Alice", by: api.node.identity)
        _ = try await api.store.foundAccount(by: api.node.identity, recovery: nil)
        let party = try await api.actions.createGroup(name: "Party", open: false, by: api.node.identity)
        let family = try await api.actions.createGroup(name: "Family", open: false, by: api.node.identity)
        func post(_ caption: String, _ fixture: String, in group: GroupID) async throws -> PostID {
            try await api.actions.post(
                NewPost(
                    photo: .file(
                        NodeBinary.fixtures.appendingPathComponent(fixture),
                        contents: try BadInputTests.fixture(fixture)
                    ),
                    caption: caption,
                    group: group
                ),
                by: api.node.identity
            )
        }
        let partyPost = try await post("Cake at the party", "lake.png", in: party)
        let familyPost = try await post("Grandma's garden, family only", "waterfall.jpg", in: family)
        let photo = try #require(try await api.store.post(familyPost, viewer: nil)?.post.photo.sha256)
        return Party(
            party: party,
            family: family,
            alicePartyPost: partyPost,
            aliceFamilyPost: familyPost,
            familyPhoto: photo
        )
    }

    /// A guest link to Party, opened by a browser that picks the name `name`, joins, and signs its name.
    static func join(_ api: InProcessAPI, as name: String, code given: String? = nil) async throws -> Guest {
        var code = given ?? ""
        if given == nil {
            let made = try await api.send(.post, "/api/guests/link", json: ["group": "Party"])
            #expect(made.status == 201, "\(made.text)")
            code = try #require(made.object["code"] as? String)
            #expect(made.object["url"] as? String == "http://127.0.0.1:7421/#guest=\(code)")
            #expect(made.object["groupName"] as? String == "Party")
            #expect((made.object["qrSvg"] as? String)?.hasPrefix("<svg") == true)
            let inspected = try await api.send(.post, "/api/browser/guest/inspect", json: ["code": code])
            #expect(inspected.object["groupName"] as? String == "Party", "\(inspected.text)")
            #expect(inspected.object["host"] as? String == "Alice")
        }
        var browser = Browser()
        let founding = try browser.sign(AccountRecord.founding(recovery: nil).body, by: browser.device, after: nil)
        let accepted = try await api.send(
            .post,
            "/api/browser/guest/accept",
            json: [
                "code": code, "name": " \(name) ", "device": browser.device.author.hex,
                "log": browser.log.author.hex, "record": BrowserDeviceTests.encoded(founding),
            ]
        )
        #expect(accepted.status == 201, "\(accepted.text)")
        #expect(accepted.object["name"] as? String == name)
        let cookie = try #require(accepted.headers[.setCookie])
        browser.token = String(cookie.dropFirst("continuum-browser-7421=".count).prefix { $0 != ";" })
        // Its log declared as its device's (both keys sign): what the log writes is the guest account's.
        let groupText = try #require(accepted.object["group"] as? String)
        let group = try #require(GroupID(hex: groupText))
        let declaration = try browser.sign(
            AccountRecord.logDeclaration(
                account: AccountID(founding: founding.id),
                group: group,
                log: browser.log.author,
                signature: try browser.log.declaration(
                    account: AccountID(founding: founding.id),
                    group: group,
                    device: browser.device.author
                )
            ).body,
            by: browser.device,
            after: founding
        )
        let declared = try await BrowserDeviceTests.submit(declaration, as: browser, to: api)
        #expect(declared.status == 201, "\(declared.text)")
        let profile = try browser.sign(.profile(name: name), by: browser.log, after: nil)
        let named = try await BrowserDeviceTests.submit(profile, as: browser, to: api)
        #expect(named.status == 201, "\(named.text)")
        return Guest(
            browser: browser,
            account: AccountID(founding: founding.id),
            profile: profile,
            declaration: declaration,
            code: code
        )
    }

    /// A post signed by the guest's log after `previous`, its photo staged on the node first.
    static func post(
        _ caption: String,
        by guest: Guest,
        after previous: VerifiedRecord,
        _ api: InProcessAPI
    )
        async throws -> VerifiedRecord
    {
        let staged = try await api.upload(
            "/api/browser/photos",
            fields: [("caption", caption)],
            files: [("photo", "lake.png", try BadInputTests.fixture("lake.png"))],
            headers: guest.browser.headers
        )
        #expect(staged.status == 201, "\(staged.text)")
        let photo = PhotoReference(
            sha256: try #require((staged.object["sha256"] as? String).flatMap(AssetHash.init(hex:))),
            byteCount: UInt64(try #require(staged.object["bytes"] as? Int)),
            mediaType: .png,
            width: UInt32(try #require(staged.object["width"] as? Int)),
            height: UInt32(try #require(staged.object["height"] as? Int)),
            takenAt: nil,
            thumbnail: nil
        )
        let post = try guest.browser.sign(
            .post(caption: caption, photo: photo, location: nil),
            by: guest.browser.log,
            after: previous
        )
        let sent = try await BrowserDeviceTests.submit(post, as: guest.browser, to: api)
        #expect(sent.status == 201, "\(sent.text)")
        return post
    }

    @Test("a guest joins with a link, posts as itself, and sees its group alone; no key of it is on the node")
    func guestPostsAsItself() async throws {
        try await InProcessAPI.with { api in
            let setting = try await Self.party(api)
            let guest = try await Self.join(api, as: "Gina")
            let headers = guest.browser.headers
            let me = try await api.get("/api/browser/me", headers: headers)
            #expect(me.object["guest"] as? Bool == true && me.object["name"] as? String == "Gina", "\(me.text)")
            let groups = try #require(me.object["groups"] as? [[String: Any]])
            #expect(groups.map { $0["id"] as? String } == [setting.party.hex])
            #expect(groups.map { $0["log"] as? String } == [guest.browser.log.author.hex])

            let post = try await Self.post(
                "Gina's view of the cake in the garden",
                by: guest,
                after: guest.profile,
                api
            )
            #expect(try await api.store.isFollowing(PostID(post.id)) == false, "the owner follows a guest's post")
            // A newer post of another group with the same word: it neither takes the guest's one place in a search
            // page nor shows.
            _ = try await api.actions.post(
                NewPost(
                    photo: .file(
                        NodeBinary.fixtures.appendingPathComponent("lake.png"),
                        contents: try BadInputTests.fixture("lake.png")
                    ),
                    caption: "The garden again, family only",
                    group: setting.family
                ),
                by: api.node.identity
            )
            let shown = try await api.get("/api/posts/\(post.id.hex)")
            #expect(shown.object["authorName"] as? String == "Gina", "\(shown.text)")
            #expect(shown.object["account"] as? String == guest.account.hex)
            #expect(shown.object["mine"] as? Bool == false)
            let members = try await api.store.members(of: setting.party)
            let member = try #require(members.first { $0.log == guest.browser.log.author })
            #expect(member.node.bytes == guest.browser.device.author.bytes && member.removedThrough == nil)

            // Alice's post is not the guest's: not "mine", and no reaction of the node's is shown as the guest's.
            _ = try await api.send(
                .put,
                "/api/posts/\(setting.alicePartyPost.hex)/reaction",
                json: ["reaction": "heart"]
            )
            let alices = try await api.get("/api/posts/\(setting.alicePartyPost.hex)", headers: headers)
            #expect(
                alices.object["mine"] as? Bool == false && alices.object["myReaction"] as? String == nil,
                "\(alices.text)"
            )
            #expect(
                (try await api.get("/api/posts/\(setting.alicePartyPost.hex)")).object["myReaction"] as? String
                    == "heart"
            )
            // What the guest reads: Party's posts, never Family's.
            let feed = try await api.get("/api/feed", headers: headers)
            let ids = try #require(feed.object["posts"] as? [[String: Any]]).compactMap { $0["id"] as? String }
            #expect(Set(ids) == [post.id.hex, setting.alicePartyPost.hex], "\(feed.text)")
            let ownerFeed = try await api.get("/api/feed")
            #expect((ownerFeed.object["posts"] as? [[String: Any]])?.count == 4)
            let hidden = try await api.get("/api/posts/\(setting.aliceFamilyPost.hex)", headers: headers)
            hidden.expectRefusal(status: 404, code: "unknown_post", message: "no post", of: "Family's post")
            let photo = try await api.get("/api/photos/\(setting.familyPhoto.hex)", headers: headers)
            #expect(photo.status == 404, "\(photo.text)")
            let thumbnail = try await api.get("/api/photos/\(setting.familyPhoto.hex)/thumbnail", headers: headers)
            #expect(thumbnail.status == 404, "\(thumbnail.text)")
            let found = try await api.get("/api/search?q=garden&limit=1", headers: headers)
            #expect(
                (found.object["posts"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [post.id.hex],
                "\(found.text)"
            )
            let ownerFound = try await api.get("/api/search?q=garden")
            #expect((ownerFound.object["posts"] as? [[String: Any]])?.count == 3)
            // Ids are whole for a guest: a prefix, which could list other groups' ids when ambiguous, finds nothing.
            let prefix = try await api.get("/api/posts/\(post.id.hex.prefix(8))", headers: headers)
            prefix.expectRefusal(status: 404, code: "unknown_post", message: "whole id", of: "a post id's prefix")
            let byPrefix = try await api.get(
                "/api/feed?author=\(guest.browser.log.author.hex.prefix(6))",
                headers: headers
            )
            byPrefix.expectRefusal(status: 404, code: "unknown_author", message: "whole", of: "an author's prefix")

            let listed = try await api.get("/api/guests")
            let entry = try #require((listed.object["guests"] as? [[String: Any]])?.first)
            #expect(entry["name"] as? String == "Gina" && entry["state"] as? String == "active", "\(listed.text)")
            #expect(entry["posts"] as? Int == 1 && entry["groupName"] as? String == "Party")
            #expect((listed.object["links"] as? [[String: Any]])?.first?["state"] as? String == "open")
            for secret in [guest.browser.device, guest.browser.log].map({ Data($0.privateKey.rawRepresentation) }) {
                #expect(
                    try BrowserDeviceTests.filesContaining(secret, under: api.photos.deletingLastPathComponent())
                        .isEmpty
                )
            }
        }
    }

    @Test("a guest gets 403 for the owner's powers and for others' records; nothing changes")
    func guestHasNoOwnerPowers() async throws {
        try await InProcessAPI.with { api in
            let setting = try await Self.party(api)
            let guest = try await Self.join(api, as: "Gina")
            let headers = guest.browser.headers
            let before = api.store.writeStamp()
            let refused: [(HTTPRequest.Method, String, Any)] = [
                (.get, "/api/phone", [:]), (.put, "/api/name", ["name": "Gina"]), (.get, "/api/groups", [:]),
                (.post, "/api/groups/\(setting.party.hex)/invites", [:]), (.post, "/api/guests/link", [:]),
                (.get, "/api/guests", [:]), (.delete, "/api/posts/\(setting.alicePartyPost.hex)", [:]),
                (.delete, "/api/groups/\(setting.party.hex)/members/\(guest.browser.log.author.hex)", [:]),
                (.get, "/api/notifications", [:]), (.get, "/api/status", [:]),
                (.post, "/api/posts/\(setting.alicePartyPost.hex)/comments", ["text": "x"]),
                (.get, "/api/groups/\(setting.party.hex)/members", [:]), (.post, "/api/browser/link", [:]),
            ]
            for (method, path, body) in refused {
                let answer =
                    method == .get
                    ? try await api.get(path, headers: headers)
                    : try await api.send(method, path, json: body, headers: headers)
                answer.expectRefusal(
                    status: 403,
                    code: "not_for_guests",
                    message: "not for a guest",
                    of: "\(method) \(path)"
                )
            }
            let records: [(String, VerifiedRecord, Int, String, String)] = [
                (
                    "a delete of Alice's post",
                    try guest.browser.sign(
                        .delete(targets: [setting.alicePartyPost.record]),
                        by: guest.browser.log,
                        after: guest.profile
                    ),
                    403, "not_yours", "belongs to someone else"
                ),
                (
                    "an account record signed by its group log",
                    try guest.browser.sign(
                        AccountRecord.founding(recovery: nil).body,
                        by: guest.browser.log,
                        after: guest.profile
                    ),
                    422, "record_refused", "does not sign account records"
                ),
                (
                    "a member record",
                    try guest.browser.sign(
                        .member(
                            MemberChange(
                                group: setting.party,
                                action: .add,
                                node: NodeID(unchecked: guest.browser.device.author.bytes),
                                log: NodeIdentity.generate().author
                            )
                        ),
                        by: guest.browser.log,
                        after: guest.profile
                    ), 422, "record_refused", "change their members"
                ),
                (
                    "a second log declared",
                    try guest.browser.sign(
                        AccountRecord.logDeclaration(
                            account: guest.account,
                            group: setting.party,
                            log: NodeIdentity.generate().author,
                            signature: Data(repeating: 0, count: 64)
                        ).body,
                        by: guest.browser.device,
                        after: guest.declaration
                    ), 403, "not_yours", "guest writes with the log"
                ),
            ]
            for (what, record, status, code, words) in records {
                let answer = try await BrowserDeviceTests.submit(record, as: guest.browser, to: api)
                answer.expectRefusal(status: status, code: code, message: words, of: what)
            }
            #expect(api.store.writeStamp() == before, "a refused request changed the store")
            #expect(try await api.store.post(setting.alicePartyPost, viewer: nil) != nil)
        }
    }

    @Test("the owner removes a guest: its next write is refused; a closed link admits nobody; writes are rate limited")
    func ownerRemovesAndCloses() async throws {
        try await InProcessAPI.with { api in
            let setting = try await Self.party(api)
            let gina = try await Self.join(api, as: "Gina")
            let hugo = try await Self.join(api, as: "Hugo", code: gina.code)
            // A guest's budget (60 units; 2 spent on its declaration and name): the same record resent (stored once) is
            // charged each time, before the work.
            var accepted = 0
            var limited: InProcessResponse?
            for _ in 0..<100 {
                let answer = try await BrowserDeviceTests.submit(gina.profile, as: gina.browser, to: api)
                if answer.status == 429 {
                    limited = answer
                    break
                }
                #expect(answer.status == 201)
                accepted += 1
            }
            let refusal = try #require(limited, "100 writes in a row were never limited")
            refusal.expectRefusal(status: 429, code: "rate_limited", message: "try again", of: "the 61st write")
            #expect(refusal.headers[.retryAfter] != nil)
            #expect(accepted >= 58 && accepted < 100, "\(accepted) writes before the limit")
            // Another guest is not slowed by it.
            _ = try await Self.post("Hugo's photo", by: hugo, after: hugo.profile, api)

            let removed = try await api.request(.delete, "/api/guests/\(gina.browser.device.author.hex)")
            #expect(removed.status == 200 && removed.object["state"] as? String == "removed", "\(removed.text)")
            let member = try await api.store.members(of: setting.party).first { $0.log == gina.browser.log.author }
            #expect(member?.removedThrough == 1)
            let after = try await BrowserDeviceTests.submit(gina.profile, as: gina.browser, to: api)
            after.expectRefusal(status: 401, code: "device_removed", message: "removed this guest", of: "after removal")

            // Removed from the group another way (its member revoked): its access ends as well.
            let revoked = try await api.request(
                .delete,
                "/api/groups/\(setting.party.hex)/members/\(hugo.browser.log.author.hex)"
            )
            #expect(revoked.status == 200, "\(revoked.text)")
            let hugoAfter = try await api.get("/api/feed", headers: hugo.browser.headers)
            hugoAfter.expectRefusal(status: 401, code: "device_removed", message: "removed", of: "Hugo revoked")

            let closed = try await api.send(.post, "/api/guests/close", json: [:])
            #expect(closed.object["closed"] as? Int == 1, "\(closed.text)")
            let before = api.store.writeStamp()
            let late = Browser()
            let founding = try late.sign(AccountRecord.founding(recovery: nil).body, by: late.device, after: nil)
            let refused = try await api.send(
                .post,
                "/api/browser/guest/accept",
                json: [
                    "code": gina.code, "name": "Ivy", "device": late.device.author.hex, "log": late.log.author.hex,
                    "record": BrowserDeviceTests.encoded(founding),
                ]
            )
            refused.expectRefusal(status: 403, code: "link_refused", message: "closed", of: "a closed link")
            let blank = try await api.send(
                .post,
                "/api/browser/guest/accept",
                json: [
                    "code": gina.code, "name": "  ", "device": late.device.author.hex, "log": late.log.author.hex,
                    "record": "",
                ]
            )
            blank.expectRefusal(status: 400, code: "bad_request", message: "name", of: "a blank name")
            #expect(api.store.writeStamp() == before, "a refused join changed the store")
        }
    }
}
