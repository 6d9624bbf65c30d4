import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Hummingbird
import Testing

/// Bad input to the group routes (groups, invites, joins, requests, moderation), in-process (``InProcessAPI``): its
/// status and error code, a JSON error body whose message says what went wrong, the node still answering, and the
/// store, its groups, members, requests, blocked authors and photo folder unchanged. The routes on real nodes that
/// join, ask and sync are tested in SyncTests (GroupAPITests).
@Suite("HTTP API: bad input to the group routes")
struct GroupBadInputTests {
    /// One bad request: its status, error code and message words.
    struct BadRequest: Sendable, CustomStringConvertible {
        let description: String
        let status: Int
        let code: String
        let message: String
        let send: @Sendable (InProcessAPI, Fixture) async throws -> InProcessResponse
    }

    /// What the bad requests refer to: Alice's post in Choir, and her log key there.
    struct Fixture: Sendable {
        let post: String
        let me: String
    }

    static let bad: [BadRequest] = [
        BadRequest(
            description: "a blank group name",
            status: 400,
            code: "missing_name",
            message: "give the group a name"
        ) { api, _ in
            try await api.send(.post, "/api/groups", json: ["name": "  "])
        },
        BadRequest(description: "a group without a name", status: 400, code: "missing_name", message: "such as Family")
        { api, _ in
            try await api.send(.post, "/api/groups", json: ["open": true])
        },
        BadRequest(description: "a group name on two lines", status: 400, code: "invalid_text", message: "control") {
            api,
            _ in
            try await api.send(.post, "/api/groups", json: ["name": "line\nbreak"])
        },
        BadRequest(
            description: "a second group with the name of one the node is in (case and accents aside)",
            status: 409,
            code: "group_exists",
            message: "in a group named 'Choir' already"
        ) { api, _ in
            try await api.send(.post, "/api/groups", json: ["name": " CHOÏR "])
        },
        BadRequest(description: "members of an unknown group", status: 404, code: "unknown_group", message: "'nope'") {
            api,
            _ in
            try await api.get("/api/groups/nope/members")
        },
        BadRequest(
            description: "an invite that expires at once",
            status: 400,
            code: "bad_request",
            message: "expiresMinutes must be 1 to 10080"
        ) { api, _ in
            try await api.send(.post, "/api/groups/Choir/invites", json: ["expiresMinutes": 0])
        },
        BadRequest(
            description: "an invite to a host name",
            status: 400,
            code: "bad_request",
            message: "host must be an IPv4 address"
        ) { api, _ in
            try await api.send(.post, "/api/groups/Choir/invites", json: ["host": "my-laptop.local"])
        },
        BadRequest(description: "an invite to an unknown group", status: 404, code: "unknown_group", message: "'nope'")
        {
            api,
            _ in
            try await api.send(.post, "/api/groups/nope/invites", json: [String: Any]())
        },
        BadRequest(
            description: "a mistyped invite code",
            status: 400,
            code: "bad_code",
            message: "only letters and digits"
        ) { api, _ in
            try await api.send(.post, "/api/join", json: ["code": "0441J-DN9MC-ZZZZZ-UUUUU-ZZZZZ"])
        },
        BadRequest(
            description: "a join by a name no open group nearby has",
            status: 409,
            code: "join_refused",
            message: "'not-a-code' is not an invite code, and LAN discovery is off here"
        ) { api, _ in
            try await api.send(.post, "/api/join", json: ["code": "not-a-code"])
        },
        BadRequest(description: "a join without a code", status: 400, code: "missing_code", message: "paste the invite")
        { api, _ in
            try await api.send(.post, "/api/join", json: [String: Any]())
        },
        BadRequest(description: "requests?all=maybe", status: 400, code: "bad_request", message: "true or false") {
            api,
            _ in
            try await api.get("/api/requests?all=maybe")
        },
        BadRequest(
            description: "approve an unknown request",
            status: 404,
            code: "unknown_request",
            message: "no request to join is from a node starting with 'abcd'"
        ) { api, _ in
            try await api.send(.post, "/api/requests/abcd/approve", json: [String: Any]())
        },
        BadRequest(
            description: "deny an unknown request",
            status: 404,
            code: "unknown_request",
            message: "no request to join is from a node starting with 'abcd'"
        ) { api, _ in
            try await api.request(.post, "/api/requests/abcd/deny")
        },
        BadRequest(
            description: "remove an unknown member",
            status: 404,
            code: "unknown_member",
            message: "no member of this group has a log key or node id starting with 'abcdef'"
        ) { api, _ in
            try await api.request(.delete, "/api/groups/Choir/members/abcdef")
        },
        BadRequest(description: "remove this node itself", status: 400, code: "bad_request", message: "remove itself") {
            try await $0.request(.delete, "/api/groups/Choir/members/\($1.me)")
        },
        BadRequest(description: "hide a post", status: 404, code: "unknown_comment", message: "no comment") {
            try await $0.request(.post, "/api/comments/\($1.post)/hide")
        },
        BadRequest(description: "hide a comment id that is not hex", status: 400, code: "bad_request", message: "zz") {
            api,
            _ in
            try await api.request(.post, "/api/comments/zz/hide")
        },
        BadRequest(description: "block an unknown author", status: 404, code: "unknown_author", message: "0000") {
            api,
            _ in
            try await api.request(.put, "/api/authors/0000/block")
        },
        BadRequest(description: "block this node itself", status: 400, code: "bad_request", message: "block itself") {
            try await $0.request(.put, "/api/authors/\($1.me)/block")
        },
        BadRequest(description: "unblock an author that is not hex", status: 400, code: "bad_request", message: "xyz") {
            api,
            _ in
            try await api.request(.delete, "/api/authors/xyz/block")
        },
        BadRequest(
            description: "a post into a group this node is not in",
            status: 404,
            code: "unknown_group",
            message: "Orchestra"
        ) { api, _ in
            try await api.upload(
                fields: [("caption", "where to?"), ("group", "Orchestra")],
                files: [("photo", "lake.png", try BadInputTests.fixture("lake.png"))]
            )
        },
    ]

    /// Alice, admin of Choir, with a post there, an open invite, Dave's request to join waiting, and Bob blocked.
    static func prepare(_ api: InProcessAPI) async throws -> Fixture {
        let alice = api.node.identity
        try await api.actions.setName("Alice", by: alice)
        let choir = try await api.actions.createGroup(name: "Choir", open: false, by: alice)
        let lake = NodeBinary.fixtures.appendingPathComponent("lake.png")
        let post = try await api.actions.post(
            NewPost(photo: .file(lake, contents: try Data(contentsOf: lake)), caption: "mine"),
            by: alice
        )
        _ = try await api.actions.invite(to: choir, lifetime: .seconds(3600), by: alice)
        let asked = try await api.store.askToJoin(
            node: NodeID(unchecked: Data(repeating: 0x11, count: 32)),
            log: AuthorID(unchecked: Data(repeating: 0x22, count: 32)),
            name: "Dave",
            host: "127.0.0.1",
            port: 7420
        )
        #expect(asked == .pending(first: true))
        var bob = RecordFactory(authorCount: 1, seed: 7)
        bob.make(.profile(name: "Bob"), by: 0)
        _ = try await api.store.ingest(bob.records)
        _ = try await api.actions.block(bob.authors[0].author, by: alice)
        let me = try #require(try await api.store.groups().first?.log)
        return Fixture(post: post.hex, me: me.hex)
    }

    @Test func badInputIsRefusedAndChangesNothing() async throws {
        try await InProcessAPI.with { api in
            let fixture = try await Self.prepare(api)
            let before = try await BadInputTests.Snapshot(api)
            let groups = try await GroupState(api)
            #expect(groups.groups.map(\.name) == ["Choir"] && groups.members.map(\.count) == [1])
            #expect(groups.requests.map(\.name) == ["Dave"] && groups.blocked.count == 1)
            #expect(groups.writes != nil)
            for bad in Self.bad {
                let response = try await bad.send(api, fixture)
                response.expectRefusal(status: bad.status, code: bad.code, message: bad.message, of: "\(bad)")
                #expect(try await BadInputTests.Snapshot(api) == before, "\(bad) changed the store")
                #expect(try await GroupState(api) == groups, "\(bad) changed the groups")
                let status = try await api.get("/api/status")
                #expect(status.status == 200, "still serving after \(bad)")
            }
            // And a good request still works.
            let good = try await api.get("/api/groups")
            #expect(good.status == 200)
            #expect((good.object["groups"] as? [[String: Any]])?.map { $0["name"] as? String } == ["Choir"])
        }
    }

    @Test func aNodeInNoGroupCannotInvite() async throws {
        try await InProcessAPI.with { api in
            let response = try await api.send(.post, "/api/groups/x/invites", json: [String: Any]())
            #expect(response.status == 404 && response.errorCode == "unknown_group", "\(response.text)")
            #expect(response.errorMessage.contains("'x'"), "\(response.errorMessage)")
            #expect(response.contentType == "application/json; charset=utf-8")
            #expect(try await api.store.groups().isEmpty)
            #expect(try await api.get("/api/status").status == 200)
        }
    }
}
