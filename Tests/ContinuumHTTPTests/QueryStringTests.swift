import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumTestSupport
import Foundation
import Testing

/// Query strings as browsers write them (a form, `URLSearchParams`): `+` is a space, `%2B` a plus, in-process
/// (``InProcessAPI``).
@Suite("HTTP API: query strings as browsers send them")
struct QueryStringTests {
    /// The captions of the posts a search answers with, as the API returns them.
    func captions(_ api: InProcessAPI, _ query: String) async throws -> [String] {
        let response = try await api.get("/api/search?q=\(query)")
        #expect(response.status == 200, "\(query): \(response.text)")
        let posts = try #require(response.object["posts"] as? [[String: Any]], "\(query): \(response.text)")
        return posts.compactMap { $0["caption"] as? String }
    }

    @Test("q=boat+lake finds the post with both words, as q=boat%20lake does; q=C%2B%2B looks for a plus")
    func plusIsASpace() async throws {
        try await InProcessAPI.with { api in
            let lake = NodeBinary.fixtures.appendingPathComponent("lake.png")
            let photo = try Data(contentsOf: lake)
            for caption in ["Lake at noon, Bob's boat", "Boat shed", "C++ meetup by the lake"] {
                _ = try await api.actions.post(
                    NewPost(photo: .file(lake, contents: photo), caption: caption),
                    by: api.node.identity
                )
            }
            for query in ["boat+lake", "boat%20lake", "lake+boat", "+boat++lake+"] {
                #expect(try await captions(api, query) == ["Lake at noon, Bob's boat"], "\(query)")
            }
            #expect(try await captions(api, "C%2B%2B") == ["C++ meetup by the lake"])
            // Still a refusal that says what to do when the words are only spaces.
            let blank = try await api.get("/api/search?q=+++")
            #expect(blank.status == 400 && blank.errorCode == "bad_request", "\(blank.text)")
            #expect(blank.errorMessage.contains("q=TERM"), "\(blank.text)")
        }
    }
}
