import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

extension ISO8601DateFormatter {
    static var fractional: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

/// The HTTP API of a real `continuum-node run` process, over a real socket: every route against the OpenAPI document
/// the node itself serves.
@Suite(.serialized) struct APITests {
    /// Everything a bad request must leave alone, read through the CLI and the photo folder.
    static func snapshot(_ node: TestNode) async throws -> String {
        let photos =
            FileManager.default.enumerator(atPath: node.data.appendingPathComponent("photos").path)?
            .compactMap { $0 as? String }.filter { !$0.hasPrefix("tmp") && !$0.hasPrefix("thumbs") }.sorted() ?? []
        let partials =
            (try? FileManager.default.contentsOfDirectory(
                atPath: node.data.appendingPathComponent("photos/tmp").path
            )) ?? []
        return [
            try await node.cli("feed", "--json", "--limit", "500"),
            try await node.cli("following", "--json"),
            try await node.cli("notifications", "--json"),
            try await node.cli("status", "--json").split(separator: "\n").filter { !$0.contains("lastSeen") }
                .joined(separator: "\n"),
            photos.joined(separator: ","),
            "tmp: \(partials.count)",
        ].joined(separator: "\n")
    }

    func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: NodeBinary.fixtures.appendingPathComponent(name))
    }

    func checker(_ node: TestNode) async throws -> OpenAPIChecker {
        let response = try await node.http.get("/api/openapi.json")
        #expect(response.status == 200)
        return try OpenAPIChecker(json: response.body)
    }

    /// Sends a request and checks the answer against the document; returns it.
    @discardableResult
    func call(
        _ api: OpenAPIChecker,
        _ node: TestNode,
        _ method: String,
        _ path: String,
        json: Any? = nil,
        headers: [String: String] = [:],
        expect status: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPTestResponse {
        let response: HTTPTestResponse
        if let json {
            let body = try JSONSerialization.data(withJSONObject: json)
            response = try await node.http.request(
                method,
                path,
                headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a },
                body: body
            )
        } else {
            response = try await node.http.request(method, path, headers: headers)
        }
        #expect(response.status == status, "\(method) \(path): \(response.text)", sourceLocation: sourceLocation)
        let problems = api.problems(method, path, response)
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        return response
    }

    @Test func everyRouteConformsToTheDocument() async throws {
        let alice = try await TestNode("Alice")
        let bob = try await TestNode("Bob")
        defer {
            alice.remove()
            bob.remove()
        }
        try await bob.start()
        try await alice.start(peers: [bob])
        let api = try await checker(alice)
        let waterfall = try fixture("waterfall.jpg")

        // Create by upload: with keepMetadata, the stored photo is byte for byte the upload.
        let created = try await alice.http.upload(
            fields: [
                ("caption", "Waterfall at dusk — Café"), ("location", "48.8566,2.3522"), ("keepMetadata", "true"),
            ],
            files: [("photo", "waterfall.jpg", waterfall)]
        )
        #expect(created.status == 201, "\(created.text)")
        #expect(api.problems("POST", "/api/posts", created).isEmpty, "\(api.problems("POST", "/api/posts", created))")
        let post = try #require(created.object["id"] as? String)
        let sha = try #require((created.object["photo"] as? [String: Any])?["sha256"] as? String)
        #expect(created.headers["location"] == "/api/posts/\(post)")
        #expect(created.object["following"] as? Bool == true, "own posts are followed")
        #expect(created.object["mine"] as? Bool == true)
        #expect((created.object["location"] as? [String: Any])?["latitude"] as? Double == 48.8566)
        #expect(try await alice.cli("show", post).contains("Waterfall at dusk — Café"))

        let photo = try await call(api, alice, "GET", "/api/photos/\(sha)", expect: 200)
        #expect(photo.body == waterfall)
        #expect(photo.headers["etag"] == "\"\(sha)\"")
        // Revalidated before each use: a photo can be erased, and must not live on in a browser's cache.
        #expect(photo.headers["cache-control"] == "private, no-cache")
        #expect(photo.headers["content-type"] == "image/jpeg")
        let cached = try await call(
            api,
            alice,
            "GET",
            "/api/photos/\(sha)",
            headers: ["If-None-Match": "\"\(sha)\""],
            expect: 304
        )
        #expect(cached.body.isEmpty)
        let part = try await call(
            api,
            alice,
            "GET",
            "/api/photos/\(sha)",
            headers: ["Range": "bytes=10-19"],
            expect: 206
        )
        #expect(part.body == waterfall[10..<20])
        #expect(part.headers["content-range"] == "bytes 10-19/\(waterfall.count)")
        let tail = try await call(api, alice, "GET", "/api/photos/\(sha)", headers: ["Range": "bytes=-5"], expect: 206)
        #expect(tail.body == waterfall.suffix(5))
        let download = try await call(api, alice, "GET", "/api/photos/\(sha)?download=1", expect: 200)
        #expect(download.headers["content-disposition"]?.hasPrefix("attachment") == true)
        let thumbnail = try await call(api, alice, "GET", "/api/photos/\(sha)/thumbnail", expect: 200)
        #expect(thumbnail.headers["content-type"] == "image/jpeg")
        #expect(thumbnail.body.starts(with: [0xFF, 0xD8, 0xFF]), "a JPEG")
        #expect(thumbnail.body.count < 50_000, "\(thumbnail.body.count) bytes")
        let thumbTag = try #require(thumbnail.headers["etag"])
        try await call(
            api,
            alice,
            "GET",
            "/api/photos/\(sha)/thumbnail",
            headers: ["If-None-Match": thumbTag],
            expect: 304
        )
        let noThumbnail = try await call(
            api,
            alice,
            "GET",
            "/api/photos/\(String(repeating: "ab", count: 32))/thumbnail",
            expect: 404
        )
        #expect(noThumbnail.errorCode == "thumbnail_not_here")

        // Before posting, the web UI asks where the photo says it was taken; nothing is stored.
        let sydney = try fixture("media/rotated-gps.jpg")
        let inspected = try await alice.http.upload(
            "/api/photos/inspect",
            fields: [],
            files: [("photo", "rotated-gps.jpg", sydney)]
        )
        #expect(inspected.status == 200, "\(inspected.text)")
        #expect(api.problems("POST", "/api/photos/inspect", inspected).isEmpty, "\(inspected.text)")
        let inspectedAt = try #require(inspected.object["location"] as? [String: Any])
        #expect(abs((inspectedAt["latitude"] as? Double ?? 0) - -(33 + 51 / 60 + 35.9 / 3600)) < 1e-6)
        #expect(inspected.object["takenAt"] as? String == "2023-05-06T05:08:09.000Z")
        let noPosition = try await alice.http.upload(
            "/api/photos/inspect",
            fields: [],
            files: [("photo", "lake.png", try fixture("lake.png"))]
        )
        #expect(noPosition.status == 200 && noPosition.object["location"] is NSNull, "\(noPosition.text)")
        #expect(api.problems("POST", "/api/photos/inspect", noPosition).isEmpty)

        // With neither location nor takenAt: the photo's EXIF date taken (the post's own time is when it was posted),
        // and no location, in the post or in the
        // photo's bytes as this node serves them (to the web UI, as to peers).
        let exif = try await alice.http.upload(
            fields: [("caption", "Sydney at dawn")],
            files: [("photo", "rotated-gps.jpg", sydney)]
        )
        #expect(exif.status == 201, "\(exif.text)")
        #expect(exif.object["takenAt"] as? String == "2023-05-06T05:08:09.000Z")
        let posted = (exif.object["createdAt"] as? String).flatMap(ISO8601DateFormatter.fractional.date(from:))
        #expect(posted.map { abs($0.timeIntervalSinceNow) < 60 } == true, "posted now: \(exif.text)")
        #expect(exif.object["location"] is NSNull, "\(exif.text)")
        let cleanSHA = try #require((exif.object["photo"] as? [String: Any])?["sha256"] as? String)
        let served = try await call(api, alice, "GET", "/api/photos/\(cleanSHA)", expect: 200)
        #expect(AssetHash.of(served.body).hex == cleanSHA && served.body != sydney)
        let servedFile = alice.data.appendingPathComponent("served-\(cleanSHA.prefix(8)).jpg")
        try served.body.write(to: servedFile)
        let servedTags = try IndependentReaders.exiftool(servedFile)
        #expect(IndependentReaders.locationTags(servedTags).isEmpty, "\(servedTags)")
        #expect(servedTags["IFD0:Orientation"] as? Int == 6)
        // locationFromPhoto: the EXIF position, and the photo as it is.
        let shared = try await alice.http.upload(
            fields: [("caption", "Sydney, here"), ("locationFromPhoto", "on")],
            files: [("photo", "rotated-gps.jpg", sydney)]
        )
        #expect(shared.status == 201, "\(shared.text)")
        let place = try #require(shared.object["location"] as? [String: Any])
        #expect(abs((place["latitude"] as? Double ?? 0) - -(33 + 51 / 60 + 35.9 / 3600)) < 1e-6)
        #expect((shared.object["photo"] as? [String: Any])?["sha256"] as? String == AssetHash.of(sydney).hex)
        // Given ones win.
        let given = try await alice.http.upload(
            fields: [
                ("caption", "Sydney, corrected"), ("location", "1.5,2.5"), ("takenAt", "2020-01-02T03:04:05Z"),
            ],
            files: [("photo", "rotated-gps.jpg", try fixture("media/rotated-gps.jpg"))]
        )
        #expect(given.object["takenAt"] as? String == "2020-01-02T03:04:05.000Z")
        #expect((given.object["location"] as? [String: Any])?["latitude"] as? Double == 1.5)
        for id in [exif.object["id"], shared.object["id"], given.object["id"]].compactMap({ $0 as? String }) {
            try await call(api, alice, "DELETE", "/api/posts/\(id)", expect: 200)
        }

        // Reading.
        let feed = try await call(api, alice, "GET", "/api/feed?limit=1", expect: 200)
        #expect(((feed.object["posts"] as? [[String: Any]])?.first?["id"] as? String) == post)
        let mine = try await call(api, alice, "GET", "/api/feed?mine=true", expect: 200)
        #expect((mine.object["posts"] as? [Any])?.count == 1)
        // The post's time is the photo's EXIF date taken (waterfall.jpg has one), so "since" is relative to it.
        let createdAt = try #require(created.object["createdAt"] as? String)
        let since = try await call(api, alice, "GET", "/api/feed?mine=true&since=\(createdAt)", expect: 200)
        #expect((since.object["posts"] as? [Any])?.count == 1)
        let recent = try await call(api, alice, "GET", "/api/feed?since=5d", expect: 200)
        let expectRecent =
            Date().timeIntervalSince(ISO8601DateFormatter.fractional.date(from: createdAt) ?? .distantPast) < 5 * 86_400
        #expect((recent.object["posts"] as? [Any])?.count == (expectRecent ? 1 : 0))
        let found = try await call(api, alice, "GET", "/api/search?q=CAFE", expect: 200)
        #expect(((found.object["posts"] as? [[String: Any]])?.first?["id"] as? String) == post)
        let nothing = try await call(api, alice, "GET", "/api/search?q=zebra", expect: 200)
        #expect((nothing.object["posts"] as? [Any])?.isEmpty == true)
        // Where it was taken, by name: the post's place, cities by name, a city as the feed's near.
        #expect((created.object["place"] as? [String: Any])?["name"] as? String == "Paris", "\(created.text)")
        let places = try await call(api, alice, "GET", "/api/places?q=paris&limit=3", expect: 200)
        #expect((places.object["places"] as? [[String: Any]])?.first?["country"] as? String == "France")
        let nearParis = try await call(api, alice, "GET", "/api/feed?near=Paris&radiusKm=5", expect: 200)
        #expect((nearParis.object["posts"] as? [[String: Any]])?.first?["id"] as? String == post)
        try await call(api, alice, "GET", "/api/places", expect: 400)
        try await call(api, alice, "GET", "/api/posts/\(post.prefix(8))", expect: 200)

        // Comment, edit, follow.
        let comment = try await call(
            api,
            alice,
            "POST",
            "/api/posts/\(post)/comments",
            json: ["text": "Lovely light"],
            expect: 201
        )
        let commentID = try #require(comment.object["id"] as? String)
        #expect(try await alice.cli("show", post).contains("Lovely light"))
        // React to the post and the comment, replace, take back (PROTOCOL.md §2.9); a reaction outside the set is
        // refused and signs nothing.
        let hearted = try await call(
            api,
            alice,
            "PUT",
            "/api/posts/\(post)/reaction",
            json: ["reaction": "heart"],
            expect: 200
        )
        #expect(hearted.object["myReaction"] as? String == "heart", "\(hearted.text)")
        #expect((hearted.object["reactions"] as? [[String: Any]])?.first?["count"] as? Int == 1)
        let party = try await call(
            api,
            alice,
            "PUT",
            "/api/posts/\(post)/reaction",
            json: ["reaction": "🎉"],
            expect: 400
        )
        #expect(
            party.object["error"] as? String == "unknown_reaction" && party.object["field"] as? String == "reaction"
        )
        let laughed = try await call(
            api,
            alice,
            "PUT",
            "/api/comments/\(commentID)/reaction",
            json: ["reaction": "😂"],
            expect: 200
        )
        #expect(laughed.object["myReaction"] as? String == "laugh", "\(laughed.text)")
        let shownWith = try await call(api, alice, "GET", "/api/posts/\(post)", expect: 200)
        #expect(shownWith.object["myReaction"] as? String == "heart", "\(shownWith.text)")
        #expect(
            ((shownWith.object["comments"] as? [[String: Any]])?.first?["reactions"] as? [[String: Any]])?.first?[
                "name"
            ]
                as? String == "laugh"
        )
        for _ in 0..<2 {
            let taken = try await call(api, alice, "DELETE", "/api/comments/\(commentID)/reaction", expect: 200)
            #expect(taken.object["myReaction"] is NSNull && (taken.object["reactions"] as? [Any])?.isEmpty == true)
        }
        let unhearted = try await call(api, alice, "DELETE", "/api/posts/\(post)/reaction", expect: 200)
        #expect((unhearted.object["reactions"] as? [Any])?.isEmpty == true, "\(unhearted.text)")
        try await call(api, alice, "PUT", "/api/comments/\(post)/reaction", json: ["reaction": "sad"], expect: 404)
        let edited = try await call(
            api,
            alice,
            "PATCH",
            "/api/posts/\(post)",
            json: ["caption": "Waterfall at noon"],
            expect: 200
        )
        #expect(edited.object["caption"] as? String == "Waterfall at noon")
        #expect(edited.object["edited"] as? Bool == true)
        // The location: set, then removed (null); the caption stays.
        let placed = try await call(
            api,
            alice,
            "PATCH",
            "/api/posts/\(post)",
            json: ["location": ["latitude": 46.5, "longitude": 6.25]],
            expect: 200
        )
        #expect((placed.object["location"] as? [String: Any])?["longitude"] as? Double == 6.25)
        #expect(placed.object["caption"] as? String == "Waterfall at noon")
        let unplaced = try await call(
            api,
            alice,
            "PATCH",
            "/api/posts/\(post)",
            json: ["location": NSNull()],
            expect: 200
        )
        #expect(unplaced.object["location"] is NSNull, "\(unplaced.text)")
        // A new photo: the old one is erased here (no other post shows it).
        let oldPhoto = try #require((unplaced.object["photo"] as? [String: Any])?["sha256"] as? String)
        let replaced = try await alice.http.upload(
            "/api/posts/\(post)/photo",
            method: "PUT",
            fields: [("takenAt", "2021-03-04T05:06:07Z")],
            files: [("photo", "lake.png", try fixture("lake.png"))]
        )
        #expect(replaced.status == 200, "\(replaced.text)")
        #expect(api.problems("PUT", "/api/posts/{id}/photo", replaced).isEmpty, "\(replaced.text)")
        let newPhoto = try #require((replaced.object["photo"] as? [String: Any])?["sha256"] as? String)
        #expect(newPhoto == AssetHash.of(try fixture("lake.png")).hex && newPhoto != oldPhoto)
        #expect(replaced.object["takenAt"] as? String == "2021-03-04T05:06:07.000Z")
        #expect(replaced.object["caption"] as? String == "Waterfall at noon")
        try await call(api, alice, "GET", "/api/photos/\(oldPhoto)", expect: 404)
        try await call(api, alice, "GET", "/api/photos/\(newPhoto)", expect: 200)
        let unfollowed = try await call(api, alice, "DELETE", "/api/posts/\(post)/follow", expect: 200)
        #expect(unfollowed.object["following"] as? Bool == false)
        let toggled = try await call(api, alice, "POST", "/api/posts/\(post)/follow/toggle", expect: 200)
        #expect(toggled.object["following"] as? Bool == true)
        let followed = try await call(api, alice, "PUT", "/api/posts/\(post)/follow", expect: 200)
        #expect(followed.object["following"] as? Bool == true)
        let following = try await call(api, alice, "GET", "/api/following", expect: 200)
        #expect((following.object["posts"] as? [[String: Any]])?.first?["post"] as? String == post)

        // Bob comments on Alice's post: Alice is notified.
        try await eventually("the post reached Bob") { (try? await bob.cli("show", post)) != nil }
        try await bob.cli("comment", post, "Where is this?")
        try await eventually("Alice notified") {
            let list = try await alice.http.get("/api/notifications?unread=true")
            return (list.object["unread"] as? Int ?? 0) >= 1
        }
        let notes = try await call(api, alice, "GET", "/api/notifications", expect: 200)
        let note = try #require((notes.object["notifications"] as? [[String: Any]])?.first)
        #expect(note["text"] as? String == "Where is this?")
        let marked = try await call(
            api,
            alice,
            "POST",
            "/api/notifications/read",
            json: ["ids": [note["id"] as? Int ?? 0]],
            expect: 200
        )
        #expect(marked.object["marked"] as? Int == 1)
        #expect(marked.object["unread"] as? Int == 0)
        try await call(api, alice, "POST", "/api/notifications/read", json: ["all": true], expect: 200)

        let status = try await call(api, alice, "GET", "/api/status", expect: 200)
        #expect(status.object["posts"] as? Int == 1)
        #expect(status.object["photos"] as? Int == 1 && (status.object["photoBytes"] as? Int ?? 0) > 0)
        #expect(status.object["api"] as? String == "127.0.0.1:\(alice.apiPort)")
        let page = try await alice.http.get("/")
        #expect(page.status == 200)
        #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(page.text.contains("<script"), "the web UI is served at /")
        #expect((status.object["peers"] as? [String: Any])?["connected"] as? Int == 1)
        let peers = try await call(api, alice, "GET", "/api/peers", expect: 200)
        #expect((peers.object["peers"] as? [[String: Any]])?.first?["name"] as? String == "Bob")
        // The account's devices: this node alone, with its name, and the account that status shows.
        let devices = try await call(api, alice, "GET", "/api/devices", expect: 200)
        let shown = try JSONSerialization.jsonObject(with: Data(try await alice.cli("status", "--json").utf8))
        let account = ((shown as? [String: Any])?["node"] as? [String: Any])?["account"]
        #expect(devices.object["account"] as? String == account as? String && account is String)
        #expect(devices.object["recoveryCode"] as? Bool == true, "init founded the account with a code")
        let device = try #require((devices.object["devices"] as? [[String: Any]])?.first)
        #expect((devices.object["devices"] as? [Any])?.count == 1)
        #expect(device["name"] as? String == "Alice" && device["thisDevice"] as? Bool == true)
        #expect(device["founder"] as? Bool == true && device["lastSeen"] is NSNull)
        // A link code for a new device of the account, with its QR code; bad input is a 400 naming the field, and
        // the account's devices are unchanged by any of it.
        let link = try await call(
            api,
            alice,
            "POST",
            "/api/devices/link",
            json: ["host": "127.0.0.1", "expiresMinutes": 5],
            expect: 201
        )
        #expect(link.object["account"] as? String == account as? String)
        #expect(link.object["host"] as? String == "127.0.0.1")
        let linkCode = try InviteCode(parsing: try #require(link.object["code"] as? String))
        #expect(linkCode.isLink && linkCode.port == link.object["port"] as? Int)
        #expect((link.object["qrSvg"] as? String)?.hasPrefix("<svg") == true)
        for (body, field) in [
            (["expiresMinutes": 0] as [String: Any], "expiresMinutes"), (["host": "nowhere"], "host"),
        ] {
            let bad = try await call(api, alice, "POST", "/api/devices/link", json: body, expect: 400)
            #expect(bad.object["field"] as? String == field, "\(bad.text)")
        }
        let ownID = try #require(device["id"] as? String)
        let itself = try await call(api, alice, "DELETE", "/api/devices/\(ownID.prefix(12))", expect: 400)
        #expect(itself.text.contains("this is this device"), "\(itself.text)")
        let unknown = try await call(api, alice, "DELETE", "/api/devices/00000000", expect: 404)
        #expect(unknown.object["error"] as? String == "unknown_device")
        let after = try await call(api, alice, "GET", "/api/devices", expect: 200)
        #expect((after.object["devices"] as? [Any])?.count == 1)

        // Deleting: a comment, then several at once, then a post.
        let second = try await call(
            api,
            alice,
            "POST",
            "/api/posts/\(post)/comments",
            json: ["text": "Second"],
            expect: 201
        )
        let third = try await call(
            api,
            alice,
            "POST",
            "/api/posts/\(post)/comments",
            json: ["text": "Third"],
            expect: 201
        )
        let deleted = try await call(api, alice, "DELETE", "/api/comments/\(commentID)", expect: 200)
        #expect(deleted.object["deleted"] as? [String] == [commentID])
        let ids = [second.object["id"] as? String ?? "", third.object["id"] as? String ?? ""]
        let many = try await call(api, alice, "POST", "/api/delete", json: ["ids": ids], expect: 200)
        #expect(Set(many.object["deleted"] as? [String] ?? []) == Set(ids))
        #expect(!(try await alice.cli("show", post).contains("Second")))
        let gone = try await call(api, alice, "DELETE", "/api/posts/\(post)", expect: 200)
        #expect(gone.object["deleted"] as? [String] == [post])
        #expect(try await alice.cli("feed").contains("No posts yet."))

        // The event stream: its content type and first bytes (live events are tested below).
        let events = try await alice.http.stream("/api/events", timeout: .seconds(5)) { $0.contains(": connected") }
        // The stream never ends, so its head and first bytes are checked as they came.
        let stream = try HTTPTestClient.parse(Data(events.utf8))
        #expect(stream.status == 200)
        #expect(stream.headers["content-type"]?.hasPrefix("text/event-stream") == true)
        #expect(stream.text.contains("retry: 2000"))
        let streamProblems = api.problems("GET", "/api/events", stream)
        #expect(streamProblems.isEmpty, "\(streamProblems)")
        _ = try await call(api, alice, "GET", "/api/openapi.json", expect: 200)

        // The group routes are exercised by GroupAPITests, with nodes in groups of their own.
        // So are the settings routes, by SettingsAPITests (a photo skipped for its size, a phone's view), and the
        // routes of a linked browser, which signs its own records, by BrowserDeviceTests (in-process, with keys the
        // test holds) and the browser tests (scripts/browser_phone.py, with WebCrypto's).
        let unseen = api.unseen.subtracting(api.operations(tagged: "groups")).subtracting(
            api.operations(tagged: "settings")
        ).subtracting(api.operations(tagged: "browser"))
        #expect(unseen.isEmpty, "operations never exercised: \(unseen.sorted())")
        try await alice.stop()
        try await bob.stop()
    }

    @Test func aCommentOnAnotherNodeArrivesAsAnEvent() async throws {
        let alice = try await TestNode("Alice")
        let bob = try await TestNode("Bob")
        defer {
            alice.remove()
            bob.remove()
        }
        let post = try await alice.cli("post", alice.fixture("lake.png"), "--caption", "Lake")
        try await bob.start(extra: ["--anti-entropy-interval", "600"])
        try await alice.start(peers: [bob], extra: ["--anti-entropy-interval", "600"])
        try await eventually("the post reached Bob") { (try? await bob.cli("show", post)) != nil }
        let stream = await alice.http.subscribe("/api/events", timeout: .seconds(20)) {
            $0.contains("event: comment") && $0.contains("From Bob")
        }
        try await bob.cli("comment", post, "From Bob")
        let text = try await stream.value
        let block = text.components(separatedBy: "\n\n").first { $0.contains("event: comment") }
        let data = try #require(block?.split(separator: "\n").first { $0.hasPrefix("data: ") }?.dropFirst(6))
        let event = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        #expect(event["type"] as? String == "comment")
        #expect(event["post"] as? String == post)
        #expect(event["text"] as? String == "From Bob")
        // An open event stream does not hold up shutdown: SIGINT stops the node cleanly within the harness's 10 s.
        let open = await alice.http.subscribe("/api/events", timeout: .seconds(30)) { _ in false }
        try await alice.stop()
        #expect(try await open.value.contains(": connected"))
        try await bob.stop()
    }

    /// The peak resident memory of a process, in bytes (VmHWM of /proc/PID/status).
    static func peakMemory(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    @Test func anUploadIsStreamedToDiskNotHeldInMemory() async throws {
        let alice = try await TestNode("Alice")
        defer { alice.remove() }
        try await alice.start(extra: ["--max-upload-mb", "100"])
        let pid = try #require(alice.process?.processIdentifier)
        // Warm up: one small upload, so that what the first request allocates is counted before.
        _ = try await alice.http.upload(fields: [("caption", "x")], files: [("photo", "a.txt", Data("hello".utf8))])
        let before = try Self.peakMemory(pid)
        // 48 MiB that is not an image: streamed to a temporary file, then refused after its header is read.
        let big = Data(count: 48 * 1_048_576)
        let response = try await alice.http.upload(fields: [("caption", "big")], files: [("photo", "big.bin", big)])
        #expect(response.status == 415, "\(response.text)")
        let growth = try Self.peakMemory(pid) - before
        #expect(growth < 16 * 1_048_576, "peak memory grew by \(growth / 1_048_576) MiB for a 48 MiB upload")
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: alice.data.appendingPathComponent("photos/tmp").path
        )
        #expect(leftovers.isEmpty, "the refused upload's temporary file is removed: \(leftovers)")
        try await alice.stop()
    }

    @Test func theAPIPortInUseStopsTheNodeWithAClearError() async throws {
        let alice = try await TestNode("Alice")
        let bob = try await TestNode("Bob")
        defer {
            alice.remove()
            bob.remove()
        }
        try await alice.start()
        let result = try await NodeBinary.run([
            "run", "--data", bob.data.path, "--port", "0", "--listen", "127.0.0.1", "--no-discovery",
            "--api-listen", "127.0.0.1:\(alice.apiPort)",
        ])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("cannot serve the HTTP API on 127.0.0.1:\(alice.apiPort): Address already in use;"),
            "\(result.stderr)"
        )
        #expect(result.stderr.contains("--api-listen"))
        #expect(!result.stderr.contains("bind(descriptor"), "the system's words, not NIO's call")
        #expect(try await alice.http.get("/api/status").status == 200)
        try await alice.stop()
    }
}

// MARK: Limits (Docs/API.md, "Limits")

extension APITests {
    /// A body over its limit: 413 `too_large`, a JSON error body whose message names the limit, a status the document
    /// lists for the route; nothing stored, and the node still serves.
    func expectTooLarge(
        _ response: HTTPTestResponse,
        _ method: String,
        _ path: String,
        naming words: [String],
        api: OpenAPIChecker,
        node: TestNode,
        unchanged before: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let what = "\(method) \(path)"
        #expect(response.status == 413, "\(what): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.errorCode == "too_large", "\(what): \(response.text)", sourceLocation: sourceLocation)
        for word in words {
            #expect(
                response.errorMessage.contains(word),
                "\(what): message '\(response.errorMessage)' should name '\(word)'",
                sourceLocation: sourceLocation
            )
        }
        #expect(
            response.headers["content-type"]?.hasPrefix("application/json") == true,
            "\(what): \(response.headers)",
            sourceLocation: sourceLocation
        )
        let problems = api.problems(method, path, response)
        #expect(problems.isEmpty, "\(what): \(problems)", sourceLocation: sourceLocation)
        #expect(try await Self.snapshot(node) == before, "\(what) changed the store", sourceLocation: sourceLocation)
        let status = try await node.http.get("/api/status")
        #expect(status.status == 200, "still serving after \(what)", sourceLocation: sourceLocation)
    }

    /// `{"<key>": "xxx…"}` of exactly `size` bytes.
    static func jsonBody(_ key: String, size: Int) -> Data {
        let frame = "{\"\(key)\":\"\"}"
        return Data((String(frame.dropLast(2)) + String(repeating: "x", count: size - frame.utf8.count) + "\"}").utf8)
    }

    /// `body` sent with `Transfer-Encoding: chunked` (no `Content-Length`: the node meets the limit while reading).
    static func chunked(_ method: String, _ path: String, port: Int, type: String, body: Data) -> Data {
        var request = Data(
            ("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Type: \(type)\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n").utf8
        )
        var offset = 0
        while offset < body.count {
            let piece = body[body.startIndex + offset..<body.startIndex + min(offset + 65536, body.count)]
            request.append(Data("\(String(piece.count, radix: 16))\r\n".utf8))
            request.append(piece)
            request.append(Data("\r\n".utf8))
            offset += piece.count
        }
        request.append(Data("0\r\n\r\n".utf8))
        return request
    }

    @Test func aJSONBodyOverItsLimitIsRefusedWith413() async throws {
        let alice = try await TestNode("Alice")
        defer { alice.remove() }
        let own = try await alice.cli("post", alice.fixture("lake.png"), "--caption", "Lake")
        try await alice.start()
        let api = try await checker(alice)
        let before = try await Self.snapshot(alice)
        let limit = 1_048_576
        // Every route that reads JSON, with a body one byte over 1 MiB (refused from its Content-Length).
        let routes: [(String, String, String)] = [
            ("POST", "/api/posts/\(own)/comments", "text"),
            ("PATCH", "/api/posts/\(own)", "caption"),
            ("POST", "/api/delete", "ids"),
            ("POST", "/api/notifications/read", "ids"),
        ]
        for (method, path, key) in routes {
            let response = try await alice.http.request(
                method,
                path,
                headers: ["Content-Type": "application/json"],
                body: Self.jsonBody(key, size: limit + 1)
            )
            try await expectTooLarge(
                response,
                method,
                path,
                naming: ["1 MiB", "JSON"],
                api: api,
                node: alice,
                unchanged: before
            )
        }
        // Without a Content-Length the node finds out while reading: the same answer.
        let path = "/api/posts/\(own)/comments"
        let streamed = try await alice.http.raw(
            Self.chunked(
                "POST",
                path,
                port: alice.apiPort,
                type: "application/json",
                body: Self.jsonBody("text", size: limit + 65536)
            )
        )
        try await expectTooLarge(
            streamed,
            "POST",
            path,
            naming: ["1 MiB", "JSON"],
            api: api,
            node: alice,
            unchanged: before
        )
        // Exactly 1 MiB is within the limit: read, and refused for what it says (a comment over 4096 bytes).
        let atLimit = try await alice.http.request(
            "POST",
            path,
            headers: ["Content-Type": "application/json"],
            body: Self.jsonBody("text", size: limit)
        )
        #expect(atLimit.status == 400, "\(atLimit.text)")
        #expect(atLimit.errorCode == "invalid_text", "\(atLimit.text)")
        #expect(try await Self.snapshot(alice) == before)
        // And a comment that fits is stored: the count goes from 0 to 1.
        let comment = try await alice.http.send("POST", path, json: ["text": "Still here"])
        #expect(comment.status == 201, "\(comment.text)")
        let status = try await alice.http.get("/api/status")
        #expect(status.object["comments"] as? Int == 1, "\(status.text)")
        try await alice.stop()
    }

    @Test func anUploadOverMaxUploadMBIsRefusedWith413() async throws {
        let alice = try await TestNode("Alice")
        defer { alice.remove() }
        try await alice.cli("post", alice.fixture("lake.png"), "--caption", "Lake")
        try await alice.start(extra: ["--max-upload-mb", "1"])
        let api = try await checker(alice)
        let before = try await Self.snapshot(alice)
        let image = try fixture("waterfall.jpg")
        var big = Data()
        while big.count <= 1_048_576 { big.append(image) }
        // A photo one byte over 1 MiB: refused while it streams to disk, its temporary file removed.
        let over = try await alice.http.upload(
            fields: [("caption", "big")],
            files: [("photo", "big.jpg", big.prefix(1_048_577))]
        )
        try await expectTooLarge(
            over,
            "POST",
            "/api/posts",
            naming: ["1 MiB", "--max-upload-mb"],
            api: api,
            node: alice,
            unchanged: before
        )
        #expect(over.object["field"] as? String == "photo", "\(over.text)")
        // A body that says it carries 100 MiB: refused from its head, before the node reads the body.
        let boundary = "continuum-limit-test"
        let head =
            "POST /api/posts HTTP/1.1\r\nHost: 127.0.0.1:\(alice.apiPort)\r\nConnection: close\r\n"
            + "Content-Type: multipart/form-data; boundary=\(boundary)\r\nContent-Length: \(100 * 1_048_576)\r\n\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"a.jpg\"\r\n\r\n"
        let declared = try await alice.http.raw(Data(head.utf8) + image)
        try await expectTooLarge(
            declared,
            "POST",
            "/api/posts",
            naming: ["2 MiB", "1 MiB", "--max-upload-mb"],
            api: api,
            node: alice,
            unchanged: before
        )
        // Chunked, with no Content-Length, and over the whole body's 2 MiB in fields (each under 16 KiB).
        var fields = Data()
        while fields.count <= 2 * 1_048_576 + 65536 {
            fields.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"pad\"\r\n\r\n".utf8))
            fields.append(Data(repeating: UInt8(ascii: "p"), count: 15_000))
            fields.append(Data("\r\n".utf8))
        }
        fields.append(Data("--\(boundary)--\r\n".utf8))
        let streamed = try await alice.http.raw(
            Self.chunked(
                "POST",
                "/api/posts",
                port: alice.apiPort,
                type: "multipart/form-data; boundary=\(boundary)",
                body: fields
            )
        )
        try await expectTooLarge(
            streamed,
            "POST",
            "/api/posts",
            naming: ["2 MiB", "--max-upload-mb"],
            api: api,
            node: alice,
            unchanged: before
        )
        // Exactly 1 MiB is within the limit: read whole, and refused for what it is (not an image).
        let atLimit = try await alice.http.upload(
            fields: [("caption", "zeros")],
            files: [("photo", "zeros.bin", Data(count: 1_048_576))]
        )
        #expect(atLimit.status == 415, "\(atLimit.text)")
        #expect(try await Self.snapshot(alice) == before)
        let posts = try await alice.http.get("/api/status")
        #expect(posts.object["posts"] as? Int == 1, "\(posts.text)")
        try await alice.stop()
    }

    @Test func aConnectionThatTricklesItsHeadersIsClosed() async throws {
        let alice = try await TestNode("Alice")
        defer { alice.remove() }
        // The header timeout is 10 s; the hidden option shortens it to 3 s for this test.
        let timeout = Duration.seconds(3)
        try await alice.start(extra: ["--api-header-timeout-ms", "3000"])
        let port = alice.apiPort
        let head = "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        // A new connection trickling a byte every 200 ms, and one that sends nothing: both closed after the timeout.
        let slow = Task {
            try await HTTPTestClient.blocking {
                let socket = try HTTPTestClient.connectLoopback(port, receiveTimeout: nil)
                defer { close(socket) }
                return HTTPTestClient.trickle(socket, head, every: .milliseconds(200), for: .seconds(20))
            }
        }
        let silent = Task {
            try await HTTPTestClient.blocking {
                let socket = try HTTPTestClient.connectLoopback(port, receiveTimeout: nil)
                defer { close(socket) }
                return HTTPTestClient.trickle(socket, "", every: .seconds(1), for: .seconds(20), filler: false)
            }
        }
        // Meanwhile a normal request is served at once.
        try await Task.sleep(for: .seconds(1))
        let started = ContinuousClock.now
        let status = try await alice.http.get("/api/status")
        #expect(status.status == 200, "\(status.text)")
        #expect(ContinuousClock.now - started < .seconds(2), "a normal request waits for nothing")
        for (name, task) in [("trickling", slow), ("silent", silent)] {
            let result = try await task.value
            let closed = try #require(result.closedAfter, "the \(name) connection is still open after 20 s")
            #expect(closed >= timeout - .milliseconds(500), "the \(name) connection was closed after only \(closed)")
            #expect(closed < timeout + .seconds(5), "the \(name) connection was closed after \(closed)")
            #expect(result.received.isEmpty, "\(name): \(String(decoding: result.received, as: UTF8.self))")
        }
        #expect(try await slow.value.sent >= 10, "the trickle went on until the close")

        // A kept-alive connection idle between requests is left open; the next request's trickle is cut again.
        let keptAlive = try await HTTPTestClient.blocking {
            let socket = try HTTPTestClient.connectLoopback(port, receiveTimeout: 30)
            defer { close(socket) }
            let request = Data((head + "\r\n").utf8)
            try HTTPTestClient.write(socket, request)
            let first = try HTTPTestClient.readOne(socket)
            Thread.sleep(forTimeInterval: 4.5)
            try HTTPTestClient.write(socket, request)
            let second = try HTTPTestClient.readOne(socket)
            return (
                first.status, second.status,
                HTTPTestClient.trickle(socket, head, every: .milliseconds(200), for: .seconds(20))
            )
        }
        #expect(keptAlive.0 == 200)
        #expect(
            keptAlive.1 == 200,
            "a connection idle for longer than the header timeout still serves its next request"
        )
        let closed = try #require(keptAlive.2.closedAfter, "the kept-alive connection's trickle is never cut")
        #expect(closed >= timeout - .milliseconds(500) && closed < timeout + .seconds(5), "closed after \(closed)")
        #expect(try await alice.http.get("/api/status").status == 200)
        try await alice.stop()
    }
}
