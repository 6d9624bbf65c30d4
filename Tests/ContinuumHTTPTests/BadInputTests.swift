import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Hummingbird
import Testing

/// Every kind of bad input the HTTP API refuses, in-process (``InProcessAPI``): its status and error code, a JSON
/// error body whose message says what to do, nothing stored, and the node still answering. What needs a real socket
/// (bodies over the limit on the wire, trickled headers, a port in use) is tested in SyncTests (APITests).
@Suite("HTTP API: bad input is refused and stores nothing")
struct BadInputTests {
    /// One bad request: its status and error code, a message that says what to do, nothing stored, still serving.
    struct BadRequest: Sendable, CustomStringConvertible {
        let description: String
        let status: Int
        let code: String
        let message: String
        let send: @Sendable (InProcessAPI, Fixture) async throws -> InProcessResponse
    }

    /// What the bad requests refer to: a post of this node's, one of Bob's (another author), the fixtures.
    struct Fixture: Sendable {
        let own: String
        let ownPhoto: String
        let foreign: String
        let image: Data
        let truncated: Data
        let garbage: Data
        let text: Data
        /// Without a GPS position.
        let lake: Data
        /// A HEIC with a GPS position (exiv2 cannot write HEIC).
        let heic: Data
    }

    static let bad: [BadRequest] = [
        BadRequest(description: "upload without caption", status: 400, code: "missing_caption", message: "caption") {
            try await $0.upload(fields: [], files: [("photo", "a.jpg", $1.image)])
        },
        BadRequest(description: "upload with blank caption", status: 400, code: "missing_caption", message: "caption") {
            try await $0.upload(fields: [("caption", "  \n")], files: [("photo", "a.jpg", $1.image)])
        },
        BadRequest(description: "upload of a text file", status: 415, code: "not_an_image", message: "not an image") {
            try await $0.upload(fields: [("caption", "x")], files: [("photo", "notes.txt", $1.text)])
        },
        BadRequest(
            description: "upload of a truncated JPEG",
            status: 422,
            code: "corrupt_image",
            message: "truncated.jpg"
        ) {
            try await $0.upload(fields: [("caption", "x")], files: [("photo", "truncated.jpg", $1.truncated)])
        },
        BadRequest(
            description: "upload of a JPEG with garbage after a valid header",
            status: 422,
            code: "corrupt_image",
            message: "damaged"
        ) {
            try await $0.upload(fields: [("caption", "x")], files: [("photo", "g.jpg", $1.garbage)])
        },
        BadRequest(
            description: "upload with a takenAt that is not a time",
            status: 400,
            code: "bad_request",
            message: "RFC 3339"
        ) {
            try await $0.upload(
                fields: [("caption", "x"), ("takenAt", "yesterday")],
                files: [("photo", "a.jpg", $1.image)]
            )
        },
        BadRequest(description: "upload over the limit", status: 413, code: "too_large", message: "--max-upload-mb") {
            var big = $1.image
            while big.count <= 1_200_000 { big.append($1.image) }
            return try await $0.upload(fields: [("caption", "big")], files: [("photo", "big.jpg", big)])
        },
        BadRequest(description: "upload without photo", status: 400, code: "missing_photo", message: "photo") {
            api,
            _ in
            try await api.upload(fields: [("caption", "x")], files: [])
        },
        BadRequest(
            description: "upload that is not multipart",
            status: 400,
            code: "not_multipart",
            message: "multipart"
        ) {
            api,
            _ in
            try await api.send(.post, "/api/posts", json: ["caption": "x"])
        },
        BadRequest(description: "upload with a bad location", status: 400, code: "bad_location", message: "LAT,LON") {
            try await $0.upload(
                fields: [("caption", "x"), ("location", "91,0")],
                files: [("photo", "a.jpg", $1.image)]
            )
        },
        BadRequest(
            description: "upload of a HEIC with a GPS position",
            status: 422,
            code: "location_not_removable",
            message: "gps.heic: this HEIC says where it was taken (a GPS position), and exiv2 cannot write HEIC files, "
                + "so it cannot be removed without re-encoding the photo; send keepMetadata=true to post it as it is"
        ) {
            try await $0.upload(fields: [("caption", "x")], files: [("photo", "gps.heic", $1.heic)])
        },
        BadRequest(
            description: "upload with locationFromPhoto of a photo without a position",
            status: 422,
            code: "no_location",
            message: "lake.png: the photo has no GPS position in its metadata to share"
        ) {
            try await $0.upload(
                fields: [("caption", "x"), ("locationFromPhoto", "true")],
                files: [("photo", "lake.png", $1.lake)]
            )
        },
        BadRequest(
            description: "upload with both location and locationFromPhoto",
            status: 400,
            code: "bad_request",
            message: "either location or locationFromPhoto"
        ) {
            try await $0.upload(
                fields: [("caption", "x"), ("location", "1,2"), ("locationFromPhoto", "true")],
                files: [("photo", "a.jpg", $1.image)]
            )
        },
        BadRequest(
            description: "upload with keepMetadata=maybe",
            status: 400,
            code: "bad_request",
            message: "keepMetadata must be true or false"
        ) {
            try await $0.upload(
                fields: [("caption", "x"), ("keepMetadata", "maybe")],
                files: [("photo", "a.jpg", $1.image)]
            )
        },
        BadRequest(description: "inspect a text file", status: 415, code: "not_an_image", message: "notes.txt") {
            try await $0.upload("/api/photos/inspect", fields: [], files: [("photo", "notes.txt", $1.text)])
        },
        BadRequest(description: "inspect without a photo", status: 400, code: "missing_photo", message: "photo") {
            api,
            _ in try await api.upload("/api/photos/inspect", fields: [("caption", "x")], files: [])
        },
        BadRequest(
            description: "upload with a caption over 2048 bytes",
            status: 400,
            code: "invalid_text",
            message: "2048"
        ) {
            try await $0.upload(
                fields: [("caption", String(repeating: "é", count: 1100))],
                files: [("photo", "a.jpg", $1.image)]
            )
        },
        BadRequest(description: "unknown post", status: 404, code: "unknown_post", message: "no post") { api, _ in
            try await api.get("/api/posts/\(String(repeating: "f", count: 64))")
        },
        BadRequest(description: "comment on an unknown post", status: 404, code: "unknown_post", message: "no post") {
            api,
            _ in
            try await api.send(.post, "/api/posts/abcdef0123/comments", json: ["text": "hi"])
        },
        BadRequest(description: "a post id that is not hex", status: 400, code: "bad_request", message: "not an id") {
            api,
            _ in
            try await api.get("/api/posts/zzzz")
        },
        BadRequest(description: "malformed cursor", status: 400, code: "bad_cursor", message: "nextCursor") { api, _ in
            try await api.get("/api/feed?cursor=not-a-cursor")
        },
        BadRequest(
            description: "events with progress=maybe",
            status: 400,
            code: "bad_request",
            message: "progress must be true or false"
        ) { api, _ in
            try await api.get("/api/events?progress=maybe")
        },
        BadRequest(description: "bad since", status: 400, code: "bad_since", message: "duration") { api, _ in
            try await api.get("/api/feed?since=yesterday")
        },
        BadRequest(description: "limit out of range", status: 400, code: "bad_request", message: "1 to 500") { api, _ in
            try await api.get("/api/feed?limit=0")
        },
        BadRequest(description: "mine=maybe", status: 400, code: "bad_request", message: "true or false") { api, _ in
            try await api.get("/api/feed?mine=maybe")
        },
        BadRequest(description: "search without a term", status: 400, code: "bad_request", message: "q=") { api, _ in
            try await api.get("/api/search?q=%20")
        },
        BadRequest(
            description: "edit of someone else's post",
            status: 403,
            code: "not_owner",
            message: "belongs to Bob"
        ) {
            try await $0.send(.patch, "/api/posts/\($1.foreign)", json: ["caption": "mine now"])
        },
        BadRequest(description: "edit without caption", status: 400, code: "missing_caption", message: "blank") {
            try await $0.send(.patch, "/api/posts/\($1.own)", json: ["caption": ""])
        },
        BadRequest(
            description: "edit that changes nothing",
            status: 400,
            code: "nothing_to_change",
            message: "location"
        ) {
            try await $0.send(.patch, "/api/posts/\($1.own)", json: [String: Any]())
        },
        BadRequest(
            description: "edit to a location not on Earth",
            status: 400,
            code: "bad_request",
            message: "out of range"
        ) {
            try await $0.send(
                .patch,
                "/api/posts/\($1.own)",
                json: ["location": ["latitude": 91.0, "longitude": 0.0]]
            )
        },
        BadRequest(
            description: "new photo not sent as multipart",
            status: 400,
            code: "not_multipart",
            message: "multipart"
        ) {
            try await $0.send(.put, "/api/posts/\($1.own)/photo", json: ["photo": "x"])
        },
        BadRequest(
            description: "new photo that is not an image",
            status: 415,
            code: "not_an_image",
            message: "not an image"
        ) {
            try await $0.upload(
                "/api/posts/\($1.own)/photo",
                method: .put,
                fields: [],
                files: [("photo", "notes.jpg", $1.text)]
            )
        },
        BadRequest(
            description: "new photo for someone else's post",
            status: 403,
            code: "not_owner",
            message: "belongs to Bob"
        ) {
            try await $0.upload(
                "/api/posts/\($1.foreign)/photo",
                method: .put,
                fields: [],
                files: [("photo", "lake.png", $1.lake)]
            )
        },
        BadRequest(description: "edit with malformed JSON", status: 400, code: "bad_request", message: "JSON") {
            try await $0.request(
                .patch,
                "/api/posts/\($1.own)",
                headers: [.contentType: "application/json"],
                body: Data("{caption:".utf8)
            )
        },
        BadRequest(
            description: "delete of someone else's post",
            status: 403,
            code: "not_owner",
            message: "belongs to Bob"
        ) {
            try await $0.request(.delete, "/api/posts/\($1.foreign)")
        },
        BadRequest(
            description: "delete own and foreign at once",
            status: 403,
            code: "not_owner",
            message: "belongs to Bob"
        ) {
            try await $0.send(.post, "/api/delete", json: ["ids": [$1.own, $1.foreign]])
        },
        BadRequest(
            description: "delete a post through the comment route",
            status: 404,
            code: "unknown_comment",
            message: "no comment"
        ) {
            try await $0.request(.delete, "/api/comments/\($1.own)")
        },
        BadRequest(description: "delete with no ids", status: 400, code: "bad_request", message: "at least one") {
            api,
            _ in
            try await api.send(.post, "/api/delete", json: ["ids": [String]()])
        },
        BadRequest(description: "blank comment", status: 400, code: "blank_comment", message: "blank") {
            try await $0.send(.post, "/api/posts/\($1.own)/comments", json: ["text": " "])
        },
        BadRequest(description: "comment over 4096 bytes", status: 400, code: "invalid_text", message: "4096") {
            try await $0.send(
                .post,
                "/api/posts/\($1.own)/comments",
                json: ["text": String(repeating: "x", count: 5000)]
            )
        },
        BadRequest(description: "comment with a wrong type", status: 400, code: "bad_request", message: "JSON") {
            try await $0.send(.post, "/api/posts/\($1.own)/comments", json: ["text": 5])
        },
        BadRequest(description: "follow an unknown post", status: 404, code: "unknown_post", message: "no post") {
            api,
            _ in
            try await api.request(.put, "/api/posts/0123456789abcdef/follow")
        },
        BadRequest(
            description: "mark an unknown notification read",
            status: 404,
            code: "unknown_notification",
            message: "nothing was marked"
        ) { api, _ in
            try await api.send(.post, "/api/notifications/read", json: ["ids": [999_999]])
        },
        BadRequest(description: "mark read with neither ids nor all", status: 400, code: "bad_request", message: "all")
        {
            api,
            _ in
            try await api.send(.post, "/api/notifications/read", json: [String: Int]())
        },
        BadRequest(description: "photo hash that is not hex", status: 400, code: "bad_request", message: "64 hex") {
            api,
            _ in
            try await api.get("/api/photos/xyz")
        },
        BadRequest(description: "unknown photo", status: 404, code: "unknown_photo", message: "not on this node") {
            api,
            _ in
            try await api.get("/api/photos/\(String(repeating: "0", count: 64))")
        },
        BadRequest(description: "range past the end", status: 416, code: "bad_range", message: "outside") {
            try await $0.get(
                "/api/photos/\($1.ownPhoto)",
                headers: [.range: "bytes=999999999-"]
            )
        },
        BadRequest(description: "another Host (DNS rebinding)", status: 403, code: "bad_host", message: "localhost") {
            api,
            _ in
            try await api.get("/api/status", host: "evil.example:80")
        },
        BadRequest(
            description: "a write from another web page",
            status: 403,
            code: "bad_origin",
            message: "evil.example"
        ) {
            try await $0.request(
                .post,
                "/api/posts/\($1.own)/comments",
                headers: [.origin: "http://evil.example", .contentType: "application/json"],
                body: Data(#"{"text":"csrf"}"#.utf8)
            )
        },
        BadRequest(description: "unknown route", status: 404, code: "not_found", message: "no such") { api, _ in
            try await api.get("/api/nothing-here")
        },
    ]

    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: NodeBinary.fixtures.appendingPathComponent(name))
    }

    /// A node named Alice with a post of hers (the lake) and one of Bob's, stored as if a peer had sent it.
    static func prepare(_ api: InProcessAPI) async throws -> Fixture {
        try await api.actions.setName("Alice", by: api.node.identity)
        let lake = try fixture("lake.png")
        let own = try await api.actions.post(
            NewPost(
                photo: .file(NodeBinary.fixtures.appendingPathComponent("lake.png"), contents: lake),
                caption: "Lake"
            ),
            by: api.node.identity
        )
        var bob = RecordFactory(authorCount: 1, seed: 7)
        bob.make(.profile(name: "Bob"), by: 0)
        let foreign = bob.post(by: 0)
        _ = try await api.store.ingest(bob.records)
        return Fixture(
            own: own.hex,
            ownPhoto: AssetHash.of(lake).hex,
            foreign: PostID(foreign.id).hex,
            image: try fixture("waterfall.jpg"),
            truncated: try fixture("truncated.jpg"),
            garbage: try fixture("media/garbage-after-header.jpg"),
            text: Data("just some notes\n".utf8),
            lake: lake,
            heic: try fixture("media/gps.heic")
        )
    }

    /// Everything a bad request must leave alone: the feed, the follows, the notifications, the store's counts, the
    /// photo folder and its partial uploads.
    struct Snapshot: Equatable {
        let feed: FeedPage
        let following: [FollowedPost]
        let notifications: [NotificationSummary]
        let counts: StoreCounts
        let photos: [String]
        let partials: [String]

        init(_ api: InProcessAPI) async throws {
            feed = try await api.store.feed(FeedQuery(limit: 500))
            following = try await api.store.following()
            notifications = try await api.store.notifications()
            counts = try await api.store.counts()
            photos =
                FileManager.default.enumerator(atPath: api.photos.path)?
                .compactMap { $0 as? String }.filter { !$0.hasPrefix("tmp") && !$0.hasPrefix("thumbs") }.sorted() ?? []
            let tmp = api.photos.appendingPathComponent("tmp").path
            partials =
                FileManager.default.fileExists(atPath: tmp)
                ? try FileManager.default.contentsOfDirectory(atPath: tmp) : []
        }
    }

    /// The keys an error body may have (the OpenAPI document's `Error`: `error` and `message`, maybe `field`).
    static func isErrorBody(_ response: InProcessResponse) -> Bool {
        let object = response.object
        let keys = Set(object.keys)
        return keys.isSubset(of: ["error", "message", "field"]) && object["error"] is String
            && object["message"] is String && (object["field"] == nil || object["field"] is String)
    }

    @Test func badInputIsRefusedAndStoresNothing() async throws {
        var configuration = APIConfiguration()
        configuration.maxUploadBytes = 1_048_576
        try await InProcessAPI.with(configuration) { api in
            let fixture = try await Self.prepare(api)
            let before = try await Snapshot(api)
            #expect(before.feed.posts.count == 2)
            #expect(Set(before.feed.posts.compactMap(\.authorName)) == ["Alice", "Bob"])
            for bad in Self.bad {
                let response = try await bad.send(api, fixture)
                response.expectRefusal(status: bad.status, code: bad.code, message: bad.message, of: "\(bad)")
                #expect(try await Snapshot(api) == before, "\(bad) changed the store")
                let status = try await api.get("/api/status")
                #expect(status.status == 200, "still serving after \(bad)")
            }
            // And a good request still works.
            let comment = try await api.send(.post, "/api/posts/\(fixture.own)/comments", json: ["text": "Still here"])
            #expect(comment.status == 201, "\(comment.text)")
            #expect(try await Snapshot(api).counts.comments == 1)
        }
    }
}
