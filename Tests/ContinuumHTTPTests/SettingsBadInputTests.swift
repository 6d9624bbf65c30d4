import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Hummingbird
import Testing

/// Bad input to the settings routes (the display name, a photo fetched on demand), in-process (``InProcessAPI``): the
/// error a person sees, the node still answering, and nothing changed. Fetching a photo from a peer, and the API
/// beyond loopback, are tested on real nodes in SyncTests (SettingsAPITests).
@Suite("HTTP API: bad names and photo hashes")
struct SettingsBadInputTests {
    /// One bad request: its status, error code and message words.
    struct BadRequest: Sendable, CustomStringConvertible {
        let description: String
        let status: Int
        let code: String
        let message: String
        let send: @Sendable (InProcessAPI) async throws -> InProcessResponse
    }

    /// A photo hash no post here shows.
    static let unknown = String(repeating: "ab", count: 32)

    static let bad: [BadRequest] = [
        BadRequest(description: "a blank name", status: 400, code: "missing_name", message: "give a display name") {
            try await $0.send(.put, "/api/name", json: ["name": "   "])
        },
        BadRequest(description: "no name", status: 400, code: "missing_name", message: "give a display name") {
            try await $0.send(.put, "/api/name", json: [String: Any]())
        },
        BadRequest(description: "a name over 64 bytes", status: 400, code: "invalid_text", message: "64") {
            try await $0.send(.put, "/api/name", json: ["name": String(repeating: "é", count: 33)])
        },
        BadRequest(description: "a name on two lines", status: 400, code: "invalid_text", message: "control") {
            try await $0.send(.put, "/api/name", json: ["name": "two\nlines"])
        },
        BadRequest(
            description: "fetch a photo no post shows",
            status: 404,
            code: "unknown_photo",
            message: "no post here shows photo"
        ) {
            try await $0.request(.post, "/api/photos/\(unknown)/fetch")
        },
        BadRequest(description: "fetch a hash that is not hex", status: 400, code: "bad_request", message: "SHA-256") {
            try await $0.request(.post, "/api/photos/xyz/fetch")
        },
    ]

    @Test func badInputIsRefusedAndChangesNothing() async throws {
        try await InProcessAPI.with { api in
            let alice = api.node.identity
            try await api.actions.setName("Alice", by: alice)
            let lake = NodeBinary.fixtures.appendingPathComponent("lake.png")
            let post = try await api.actions.post(
                NewPost(photo: .file(lake, contents: try Data(contentsOf: lake)), caption: "here"),
                by: alice
            )
            let before = try await BadInputTests.Snapshot(api)
            let writes = try #require(api.store.writeStamp())
            for bad in Self.bad {
                let response = try await bad.send(api)
                response.expectRefusal(status: bad.status, code: bad.code, message: bad.message, of: "\(bad)")
                #expect(try await BadInputTests.Snapshot(api) == before, "\(bad) changed the store")
                #expect(api.store.writeStamp() == writes, "\(bad) wrote to the store")
                let status = try await api.get("/api/status")
                #expect(status.status == 200, "still serving after \(bad)")
                #expect(status.object["name"] as? String == "Alice", "\(bad) changed the name")
            }
            // Still serving: a good request works.
            let good = try await api.get("/api/posts/\(post.hex)")
            #expect(good.status == 200 && good.object["caption"] as? String == "here", "\(good.text)")
        }
    }

    @Test func aBrowserOpeningAPhotoThatIsNotHereGetsAPage() async throws {
        try await InProcessAPI.with { api in
            let page = try await api.get("/api/photos/\(Self.unknown)?download=1", headers: [.accept: "text/html"])
            #expect(page.status == 404)
            #expect(page.contentType?.hasPrefix("text/html") == true, "\(page.contentType ?? "no content type")")
            #expect(page.text.contains("This photo is not on this node"), "\(page.text)")
            #expect(try await api.get("/api/status").status == 200)
        }
    }
}
