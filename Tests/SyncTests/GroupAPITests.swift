import ContinuumCore
import ContinuumStore
import Foundation
import Testing

/// The group routes of the HTTP API on real nodes: every operation tagged `groups` in the OpenAPI document, checked
/// against it. Bad input to them is tested in-process, in ContinuumHTTPTests (GroupBadInputTests).
@Suite("HTTP API: groups, invites, requests, moderation", .serialized)
struct GroupAPITests {
    let base = APITests()

    @Test("create, invite with a QR code, join by the code, members, requests, approve, deny, revoke, hide, block")
    func everyGroupRoute() async throws {
        let alice = try await TestNode("alice", network: false)
        let bob = try await TestNode("bob", network: false)
        let carol = try await TestNode("carol", network: false)
        let dave = try await TestNode("dave", network: false)
        defer { for node in [alice, bob, carol, dave] { node.remove() } }
        for node in [alice, bob, carol, dave] { try await node.start() }
        let api = try await base.checker(alice)

        let none = try await base.call(api, alice, "GET", "/api/groups", expect: 200)
        #expect((none.object["groups"] as? [Any])?.isEmpty == true)
        let created = try await base.call(api, alice, "POST", "/api/groups", json: ["name": "Choir"], expect: 201)
        // A name with a space and an accent, percent-encoded in the path.
        try await base.call(api, alice, "POST", "/api/groups", json: ["name": "Café club"], expect: 201)
        let encoded = try await base.call(api, alice, "GET", "/api/groups/Caf%C3%A9%20club/members", expect: 200)
        #expect((encoded.object["members"] as? [[String: Any]])?.count == 1)
        // In two groups, a post must say which.
        let unchosen = try await alice.http.upload(
            fields: [("caption", "which group?")],
            files: [("photo", "lake.png", try base.fixture("lake.png"))]
        )
        #expect(unchosen.status == 400 && unchosen.errorCode == "missing_group", "\(unchosen.text)")
        #expect(unchosen.errorMessage.contains("choose one with the field group"), "\(unchosen.text)")
        let group = try #require(created.object["id"] as? String)
        #expect(created.object["admin"] as? Bool == true && created.object["members"] as? Int == 1)
        let status = try await base.call(api, alice, "GET", "/api/status", expect: 200)
        #expect(status.object["groups"] as? Int == 2 && status.object["pendingRequests"] as? Int == 0)

        // An invite: its QR code's SVG, and a code that bob's node joins by.
        let invite = try await base.call(
            api,
            alice,
            "POST",
            "/api/groups/Choir/invites",
            json: ["host": "127.0.0.1", "expiresMinutes": 5],
            expect: 201
        )
        let code = try #require(invite.object["code"] as? String)
        #expect(invite.object["port"] as? Int == alice.port && invite.object["host"] as? String == "127.0.0.1")
        let svg = try #require(invite.object["qrSvg"] as? String)
        #expect(svg.hasPrefix("<svg") && svg.contains("<path"), "\(svg.prefix(80))")
        // It holds Alice's web page with #invite=CODE (her API listens on loopback: that address), which Bob's node
        // joins by as by the code.
        let url = try #require(invite.object["url"] as? String)
        #expect(url == "http://127.0.0.1:\(alice.apiPort)/#invite=\(code)")
        let expected = try QRCode(encoding: url).svg()
        #expect(svg == expected, "the QR code's text is the page's address with the code")
        let joined = try await base.call(api, bob, "POST", "/api/join", json: ["code": url], expect: 200)
        #expect(joined.object["group"] as? String == group)
        try await eventually("alice knows bob's name in the group") {
            try await alice.http.get("/api/groups/Choir/members").text.contains("\"bob\"")
        }
        let members = try await base.call(api, alice, "GET", "/api/groups/\(group.prefix(8))/members", expect: 200)
        let list = try #require(members.object["members"] as? [[String: Any]])
        #expect(list.count == 2 && list.contains { $0["name"] as? String == "bob" && $0["me"] as? Bool == false })

        // Carol asks; the request shows in the status and the list, and is approved by the API.
        let carolAsks = carol.cliInBackground("join", "--ask", "127.0.0.1:\(alice.port)", "--wait", "2")
        try await eventually("alice has carol's request") {
            try await alice.http.get("/api/status").object["pendingRequests"] as? Int == 1
        }
        let requests = try await base.call(api, alice, "GET", "/api/requests", expect: 200)
        let carolNode = try #require((requests.object["requests"] as? [[String: Any]])?.first?["node"] as? String)
        let approved = try await base.call(
            api,
            alice,
            "POST",
            "/api/requests/\(carolNode.prefix(10))/approve",
            json: ["group": "Choir"],
            expect: 200
        )
        #expect(approved.object["group"] as? String == group)
        #expect(try await carolAsks.value.status == 0)
        // Dave asks and is denied.
        let daveAsks = dave.cliInBackground("join", "--ask", "127.0.0.1:\(alice.port)", "--wait", "2")
        var daveNode = ""
        try await eventually("alice has dave's request") {
            let listed = try await alice.http.get("/api/requests").object["requests"] as? [[String: Any]]
            daveNode = listed?.first?["node"] as? String ?? ""
            return !daveNode.isEmpty
        }
        let denied = try await base.call(api, alice, "POST", "/api/requests/\(daveNode)/deny", expect: 200)
        #expect(denied.object["denied"] as? Bool == true)
        #expect(try await daveAsks.value.stderr.contains("denied your request to join"))
        let all = try await base.call(api, alice, "GET", "/api/requests?all=true", expect: 200)
        #expect((all.object["requests"] as? [[String: Any]])?.first?["deniedAt"] is String)

        // Hide: bob comments on alice's post; alice hides it.
        let post = try await alice.cli("post", alice.fixture("lake.png"), "--caption", "rehearsal", "--group", "Choir")
        try await eventually("bob has the post") { try await bob.feedJSON().contains(post) }
        let comment = try await base.call(
            api,
            bob,
            "POST",
            "/api/posts/\(post)/comments",
            json: ["text": "off-topic"],
            expect: 201
        )
        let commentID = try #require(comment.object["id"] as? String)
        try await eventually("alice has bob's comment") { try await alice.cli("show", post).contains("off-topic") }
        let notYours = try await base.call(api, bob, "POST", "/api/comments/\(commentID)/hide", expect: 403)
        #expect(notYours.errorCode == "not_owner")
        let hidden = try await base.call(api, alice, "POST", "/api/comments/\(commentID)/hide", expect: 200)
        #expect(hidden.object["hidden"] as? String == commentID)
        try await eventually("bob's node erased the hidden comment") {
            !(try await bob.cli("show", post).contains("off-topic"))
        }

        // Block and unblock bob on alice's node.
        let bobLog = try #require(list.first { $0["name"] as? String == "bob" }?["log"] as? String)
        let blocked = try await base.call(api, alice, "PUT", "/api/authors/\(bobLog.prefix(12))/block", expect: 200)
        #expect(blocked.object["blocked"] as? Bool == true)
        let blockedList = try await base.call(api, alice, "GET", "/api/blocked", expect: 200)
        #expect((blockedList.object["blocked"] as? [[String: Any]])?.first?["author"] as? String == bobLog)
        let unblocked = try await base.call(api, alice, "DELETE", "/api/authors/\(bobLog)/block", expect: 200)
        #expect(unblocked.object["blocked"] as? Bool == false)

        // Revoke carol.
        let carolLog = try #require(
            try await alice.http.get("/api/groups/Choir/members").object["members"].flatMap { $0 as? [[String: Any]] }?
                .first { $0["name"] as? String == "carol" }?["log"] as? String
        )
        let revoked = try await base.call(
            api,
            alice,
            "DELETE",
            "/api/groups/\(group)/members/\(carolLog.prefix(12))",
            expect: 200
        )
        #expect(revoked.object["log"] as? String == carolLog)

        #expect(api.unseen.intersection(api.operations(tagged: "groups")).isEmpty, "\(api.unseen.sorted())")
        for node in [dave, carol, bob, alice] { try await node.stop() }
    }
}
