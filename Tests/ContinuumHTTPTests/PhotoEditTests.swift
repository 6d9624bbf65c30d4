import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumTestSupport
import Foundation
import Testing

/// `PUT /api/posts/{id}/photo` with the caption and the location beside the photo: one save, one Edit record (so a
/// follower gets one notification), in-process (``InProcessAPI``).
@Suite("HTTP API: a new photo with a new caption and location is one edit")
struct PhotoEditTests {
    @Test("photo, caption and location in one request: one record; a blank caption or a bad location: nothing")
    func oneEdit() async throws {
        try await InProcessAPI.with { api in
            let lake = NodeBinary.fixtures.appendingPathComponent("lake.png")
            let post = try await api.actions.post(
                NewPost(photo: .file(lake, contents: try Data(contentsOf: lake)), caption: "Lake"),
                by: api.node.identity
            )
            let path = "/api/posts/\(post.hex)/photo"
            let waterfall = try BadInputTests.fixture("waterfall.jpg")
            let forest = try BadInputTests.fixture("forest.webp")
            let records = try await api.store.counts().records

            let edited = try await api.upload(
                path,
                method: .put,
                fields: [("caption", "Waterfall at dusk"), ("location", "48.8566,2.3522")],
                files: [("photo", "waterfall.jpg", waterfall)]
            )
            #expect(edited.status == 200, "\(edited.text)")
            #expect(edited.object["caption"] as? String == "Waterfall at dusk", "\(edited.text)")
            let location = edited.object["location"] as? [String: Any]
            #expect(location?["latitude"] as? Double == 48.8566 && location?["longitude"] as? Double == 2.3522)
            #expect((edited.object["photo"] as? [String: Any])?["mediaType"] as? String == "image/jpeg")
            #expect(try await api.store.counts().records == records + 1, "one Edit record for the three changes")

            // Refused before anything is stored: the post and the store as they were.
            let before = try await api.get("/api/posts/\(post.hex)").text
            let refusals: [([(String, String)], String, String)] = [
                ([("caption", "  ")], "missing_caption", "caption"),
                ([("location", "91,0")], "bad_location", "location"),
            ]
            for (fields, code, field) in refusals {
                let refused = try await api.upload(
                    path,
                    method: .put,
                    fields: fields,
                    files: [("photo", "f.webp", forest)]
                )
                #expect(refused.status == 400 && refused.errorCode == code, "\(refused.text)")
                #expect(refused.object["field"] as? String == field, "\(refused.text)")
            }
            #expect(try await api.get("/api/posts/\(post.hex)").text == before)
            #expect(try await api.store.counts().records == records + 1)

            // An empty location removes it; an absent caption keeps it.
            let removed = try await api.upload(
                path,
                method: .put,
                fields: [("location", "")],
                files: [("photo", "forest.webp", forest)]
            )
            #expect(removed.status == 200, "\(removed.text)")
            #expect(removed.object["location"] is NSNull, "\(removed.text)")
            #expect(removed.object["caption"] as? String == "Waterfall at dusk")
            #expect(try await api.store.counts().records == records + 2)
        }
    }
}
