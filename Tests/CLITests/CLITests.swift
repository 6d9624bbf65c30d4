import ContinuumCore
import ContinuumTestSupport
import Crypto
import Foundation
import Testing

extension ISO8601DateFormatter {
    static var withMilliseconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

@Suite("continuum-node, end to end through the built binary", .serialized)
struct CLITests {
    @Test("--data before the command is taken; a mistyped command is named, with the one meant, and changes nothing")
    func commandLineRepair() async throws {
        let cli = CLI()
        defer { cli.remove() }
        let first = try await NodeBinary.run(["--data", cli.data.path, "init", "--name", "Zed"])
        #expect(first.status == 0, "\(first.stderr)")
        let status = try await NodeBinary.run(["--data=\(cli.data.path)", "--log-level", "error", "status"])
        #expect(status.status == 0 && status.stdout.contains("Zed"), "\(status.stderr)")
        let typo = try await NodeBinary.run(["--data", cli.data.path, "grop", "list"])
        #expect(typo.status == 64)
        #expect(
            typo.stderr.contains("'grop' is not a continuum-node command; did you mean 'group'?"),
            "\(typo.stderr)"
        )
        let unknown = try await NodeBinary.run(["flogs"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("'flogs' is not a continuum-node command (see"), "\(unknown.stderr)")
        let nothing = try await NodeBinary.run(["--data", cli.data.path])
        #expect(nothing.status == 64 && nothing.stderr.contains("no command after --data"), "\(nothing.stderr)")
        // A write on a directory with no identity is refused, saying to run init first; reads work, and nothing
        // was made: no key, no record.
        let fresh = CLI()
        defer { fresh.remove() }
        let posted = try await fresh.run("post", fresh.fixture("lake.png"), "--caption", "first")
        #expect(posted.status == 1 && posted.stdout.isEmpty)
        #expect(
            posted.stderr.contains("this node has no identity yet")
                && posted.stderr.contains("run 'continuum-node init --name NAME' first"),
            "\(posted.stderr)"
        )
        #expect(!FileManager.default.fileExists(atPath: fresh.data.appendingPathComponent("identity.key").path))
        #expect(try await fresh.ok("feed") == "No posts yet.")
        #expect(try await fresh.ok("feed", "--mine").contains("this node has no identity yet"))
        #expect(try await fresh.ok("status").contains("node id:  none yet: run 'continuum-node init --name NAME'"))
        #expect(try await fresh.ok("status", "--json").contains("\"records\" : 0"))
        #expect(try await fresh.run("comment", "abc", "hello").stderr.contains("no identity yet"))
        #expect(!FileManager.default.fileExists(atPath: fresh.data.appendingPathComponent("identity.key").path))
        // After init, the same write works.
        try await fresh.ok("init", "--name", "Fresh")
        #expect(try await fresh.run("post", fresh.fixture("lake.png"), "--caption", "first").status == 0)
        // Nothing was written by the refused lines: the store holds the profile alone.
        #expect(try await cli.ok("status", "--json").contains("\"records\" : 1"))
    }

    @Test("init prints the recovery code in words and as a QR code; --no-recovery prints the price; status the account")
    func recoveryCode() async throws {
        let cli = CLI()
        defer { cli.remove() }
        let text = try await cli.ok("init", "--name", "Ann")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let heading = try #require(lines.firstIndex { $0.hasPrefix("Your recovery code") })
        let words = lines[heading + 2].trimmingCharacters(in: .whitespaces)
        #expect(throws: Never.self) { try RecoveryCode(words: words) }
        #expect(text.contains("█"), "the QR code is drawn")
        let account = try #require(lines.first { $0.hasPrefix("account: ") }?.dropFirst(9))
        #expect(try await cli.ok("status").contains("account:  \(account) (1 device)"))
        #expect(!(try await cli.ok("init")).contains("recovery code"), "shown once")
        // device list: the account, this one device, founder and this device.
        let list = try await cli.ok("device", "list")
        #expect(list.hasPrefix("account \(account) (1 device, a recovery code)"), "\(list)")
        #expect(list.contains("  Ann  this device, founded the account"), "\(list)")
        let devices = try await cli.run("device", "--json").json()
        #expect(devices["account"] as? String == String(account) && devices["recoveryCode"] as? Bool == true)
        let device = try #require((devices["devices"] as? [[String: Any]])?.first)
        #expect(device["thisDevice"] as? Bool == true && device["founder"] as? Bool == true)

        let bare = CLI()
        defer { bare.remove() }
        let none = try await bare.ok("init", "--name", "Ben", "--no-recovery")
        #expect(none.contains("No recovery code: if this device is lost or stolen"))
        #expect(!none.contains("Your recovery code"))
        #expect(try await bare.ok("device", "list").contains("(1 device, no recovery code)"))
    }

    @Test("init, post every format, comment, feed, search, show, edit, delete, export")
    func tour() async throws {
        let cli = CLI()
        defer { cli.remove() }
        let initJSON =
            try JSONSerialization.jsonObject(with: Data(try await cli.ok("init", "--name", "Alice", "--json").utf8))
            as? [String: Any]
        let me = try #require(initJSON?["id"] as? String)
        #expect(initJSON?["name"] as? String == "Alice" && initJSON?["created"] as? Bool == true)
        // The account, founded with a recovery code that reads back as one; shown once.
        let account = try #require(initJSON?["account"] as? String)
        #expect(account.count == 64)
        let words = try #require(initJSON?["recoveryCode"] as? String)
        #expect(words.split(separator: " ").count == 12)
        #expect(throws: Never.self) { try RecoveryCode(words: words) }
        let again = try await cli.run("init", "--json").json()
        #expect(again["account"] as? String == account && again["recoveryCode"] is NSNull)
        let keyMode =
            try FileManager.default.attributesOfItem(
                atPath: cli.data.appendingPathComponent("identity.key").path
            )[.posixPermissions] as? Int
        #expect(keyMode == 0o600)

        let waterfall = try await cli.ok(
            "post",
            cli.fixture("waterfall.jpg"),
            "--caption",
            "Waterfall at dusk",
            "--location",
            "48.8566,2.3522"
        )
        let lake = try await cli.ok("post", cli.fixture("lake.png"), "--caption", "Café by the lake")
        let forest = try await cli.ok("post", cli.fixture("forest.webp"), "--caption", "Forest")
        let gif = try await cli.ok("post", cli.fixture("anim.gif"), "--caption", "Animated")
        for id in [waterfall, lake, forest, gif] { #expect(id.count == 64) }

        // The feed: newest first, with the documented fields.
        let feed = try await cli.run("feed", "--json").json()
        let posts = try #require(feed["posts"] as? [[String: Any]])
        #expect(posts.map { $0["id"] as? String } == [gif, forest, lake, waterfall])
        let first = try #require(posts.last)
        // In no group, the node signs in its private log (its node key signs only its account log), named as it is.
        let privateLog = try #require(first["author"] as? String)
        #expect(privateLog.count == 64 && privateLog != me && first["authorName"] as? String == "Alice")
        #expect(posts.allSatisfy { $0["author"] as? String == privateLog })
        #expect(first["caption"] as? String == "Waterfall at dusk" && first["commentCount"] as? Int == 0)
        #expect((first["createdAt"] as? String)?.hasSuffix("Z") == true)
        let location = try #require(first["location"] as? [String: Double])
        #expect(abs(location["latitude"]! - 48.8566) < 1e-6 && abs(location["longitude"]! - 2.3522) < 1e-6)
        let photo = try #require(first["photo"] as? [String: Any])
        // The location stays home: waterfall.jpg has a GPS position, so what is stored is the photo without it, and
        // the post's hash is that of the stored bytes.
        let original = try Data(contentsOf: URL(fileURLWithPath: cli.fixture("waterfall.jpg")))
        let sha = try #require(photo["sha256"] as? String)
        let stored = try Data(contentsOf: cli.data.appendingPathComponent("photos/\(sha.prefix(2))/\(sha)"))
        #expect(sha == SHA256.hash(data: stored).map { String(format: "%02x", $0) }.joined())
        #expect(stored != original)
        #expect(photo["bytes"] as? Int == stored.count && photo["mediaType"] as? String == "image/jpeg")
        #expect(photo["width"] as? Int == 1024 && photo["height"] as? Int == 768)
        let types = posts.compactMap { ($0["photo"] as? [String: Any])?["mediaType"] as? String }
        #expect(types == ["image/gif", "image/webp", "image/png", "image/jpeg"])

        // Paging with the cursor.
        let page1 = try await cli.run("feed", "--json", "--limit", "3").json()
        let cursor = try #require(page1["nextCursor"] as? String)
        let page2 = try await cli.run("feed", "--json", "--limit", "3", "--cursor", cursor).json()
        #expect((page2["posts"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [waterfall])
        #expect(page2["nextCursor"] is NSNull)

        // Search ignores case and accents.
        func search(_ term: String) async throws -> [String] {
            let json = try await cli.run("search", term, "--json").json()
            return (json["posts"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        }
        #expect(try await search("water") == [waterfall])
        #expect(try await search("CAFE") == [lake])
        #expect(try await search("café") == [lake])
        // Several words, unquoted: every one of them, in any order.
        // Where the waterfall was taken, by name, from the gazetteer on this machine; a city's name as --near.
        #expect(try await cli.ok("show", waterfall).contains("location 48.8566,2.3522 (Paris, France)"))
        let nearParis = try await cli.run("feed", "--near", "paris", "--json").json()
        #expect((nearParis["posts"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [waterfall])
        let unquoted = try await cli.run("search", "lake", "CAFE", "--json").json()
        #expect((unquoted["posts"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [lake])

        // Comments, by a unique prefix of the post id.
        let comment = try await cli.ok("comment", String(waterfall.prefix(10)), "Lovely light")
        let shown = try await cli.run("show", String(waterfall.prefix(8)), "--json").json()
        let comments = try #require(shown["comments"] as? [[String: Any]])
        #expect(comments.count == 1 && comments.first?["id"] as? String == comment)
        #expect(comments.first?["post"] as? String == waterfall && comments.first?["text"] as? String == "Lovely light")
        #expect(shown["commentCount"] as? Int == 1)

        // Edit, then delete the comment and a post.
        try await cli.ok("edit", waterfall, "--caption", "Waterfall at dawn")
        #expect(try await cli.run("show", waterfall, "--json").json()["caption"] as? String == "Waterfall at dawn")
        #expect(try await search("dawn") == [waterfall])
        #expect(try await search("dusk").isEmpty)
        try await cli.ok("delete", comment, forest)
        #expect(try await cli.run("show", waterfall, "--json").json()["commentCount"] as? Int == 0)
        #expect(try await cli.feedIDs() == [gif, lake, waterfall])
        let deleted = try await cli.run("show", forest)
        #expect(deleted.status != 0 && deleted.stderr.contains("was deleted"))

        // Export: the same bytes, and the caption.
        let out = cli.data.appendingPathComponent("export")
        try await cli.ok("export", waterfall, "--to", out.path)
        let exported = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(exported == ["\(waterfall.prefix(12)).jpg", "\(waterfall.prefix(12)).txt"])
        #expect(try Data(contentsOf: out.appendingPathComponent(exported[0])) == stored)
        #expect(
            try String(contentsOf: out.appendingPathComponent(exported[1]), encoding: .utf8) == "Waterfall at dawn\n"
        )

        let status = try await cli.run("status", "--json").json()
        let store = try #require(status["store"] as? [String: Any])
        // The deleted post's photo was erased with it: three photos, those of the live posts.
        #expect(store["posts"] as? Int == 3 && store["comments"] as? Int == 0 && store["photos"] as? Int == 3)
        #expect((status["node"] as? [String: Any])?["name"] as? String == "Alice")
    }

    @Test(
        "post takes its time taken from EXIF unless told, is posted now, has a location only when asked, and makes a thumbnail without EXIF"
    )
    func exifDefaults() async throws {
        let cli = CLI()
        defer { cli.remove() }
        try await cli.ok("init")
        func post(_ arguments: String...) async throws -> [String: Any] {
            let result = try await cli.run(
                ["post", cli.fixture("media/rotated-gps.jpg"), "--caption", "x"] + arguments
            )
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let id = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            return try await cli.run("show", id, "--json").json()
        }
        // EXIF: 2023-05-06 07:08:09 at +02:00; S 33°51'35.9" E 151°12'40". Taken then; posted now.
        let fromExif = try await post()
        #expect(fromExif["takenAt"] as? String == "2023-05-06T05:08:09.000Z")
        let posted = ISO8601DateFormatter.withMilliseconds.date(from: fromExif["createdAt"] as? String ?? "")
        #expect(posted.map { abs($0.timeIntervalSinceNow) < 60 } == true, "\(fromExif)")
        // The post is at the top of the feed, and inside --since 5d, though its photo is three years old.
        #expect(try await cli.feedIDs().first == fromExif["id"] as? String)
        let recent = try await cli.run("feed", "--since", "5d", "--json").json()
        #expect((recent["posts"] as? [[String: Any]])?.first?["id"] as? String == fromExif["id"] as? String)
        // The location stays home: without --location or --location-from-photo, none.
        #expect(fromExif["location"] is NSNull, "\(fromExif)")
        let shared = try await post("--location-from-photo")
        let location = try #require(shared["location"] as? [String: Any])
        #expect((location["latitude"] as? Double).map { abs($0 - -33.8599722) < 1e-7 } == true, "\(location)")
        #expect((location["longitude"] as? Double).map { abs($0 - 151.2111111) < 1e-7 } == true, "\(location)")
        // Told: the options win.
        let told = try await post("--taken-at", "2020-01-02T03:04:05+01:00", "--location", "1.5,-2.25")
        #expect(told["takenAt"] as? String == "2020-01-02T02:04:05.000Z")
        #expect((told["location"] as? [String: Any])?["latitude"] as? Double == 1.5)
        // No EXIF date: now.
        let before = Date()
        let lake = try await cli.ok("post", cli.fixture("lake.png"), "--caption", "lake")
        let lakePost = try await cli.run("show", lake, "--json").json()
        let created = try #require(
            ISO8601DateFormatter.withMilliseconds.date(from: lakePost["createdAt"] as? String ?? "")
        )
        #expect(abs(created.timeIntervalSince(before)) < 30)
        #expect(lakePost["takenAt"] is NSNull)
        #expect(lakePost["location"] == nil || lakePost["location"] is NSNull)
        // The thumbnail: made at once, under photos/thumbs/, without EXIF (so without GPS).
        let thumbs = cli.data.appendingPathComponent("photos/thumbs")
        let files = try #require(FileManager.default.subpaths(atPath: thumbs.path)).filter { $0.hasSuffix(".jpg") }
        // Three photos: rotated-gps.jpg without its position (posted twice), as it is (shared), and lake.png.
        #expect(files.count == 3, "\(files)")
        for file in files {
            let bytes = try Data(contentsOf: thumbs.appendingPathComponent(file))
            #expect(bytes.starts(with: [0xFF, 0xD8, 0xFF]) && bytes.count < 50_000)
            #expect(bytes.range(of: Data("Exif".utf8)) == nil)
        }
    }

    @Test("the location stays home: stored and sent without it unless shared or kept, the hash that of the bytes")
    func locationStaysHome() async throws {
        let cli = CLI()
        defer { cli.remove() }
        try await cli.ok("init")
        func post(_ name: String, _ arguments: String...) async throws -> (post: [String: Any], stored: URL) {
            let post = try await cli.run(
                ["post", cli.fixture("media/\(name)"), "--caption", name, "--json"] + arguments
            )
            .json()
            let sha = try #require((post["photo"] as? [String: Any])?["sha256"] as? String)
            let stored = cli.data.appendingPathComponent("photos/\(sha.prefix(2))/\(sha)")
            let bytes = try Data(contentsOf: stored)
            #expect(sha == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined(), "\(name)")
            #expect((post["photo"] as? [String: Any])?["bytes"] as? Int == bytes.count)
            return (post, stored)
        }
        // By default: no location in the post, none in the bytes (exiftool), the same pixels (Pillow).
        for name in ["gps.jpg", "gps.png", "gps.webp"] {
            let source = URL(fileURLWithPath: cli.fixture("media/\(name)"))
            let (post, stored) = try await post(name)
            #expect(post["location"] is NSNull, "\(name): \(post)")
            #expect(try Data(contentsOf: stored) != Data(contentsOf: source))
            let tags = try IndependentReaders.exiftool(stored)
            #expect(IndependentReaders.locationTags(tags).isEmpty, "\(name): \(IndependentReaders.locationTags(tags))")
            #expect(tags["IFD0:Orientation"] as? Int == 6 && tags["ExifIFD:DateTimeOriginal"] as? String != nil)
            #expect(try IndependentReaders.samePixels(source, stored), "\(name): pixels changed")
        }
        // --location: that location in the post, still none in the bytes.
        let (given, givenFile) = try await post("gps.jpg", "--location", "1.5,2.5")
        #expect((given["location"] as? [String: Any])?["latitude"] as? Double == 1.5)
        #expect(IndependentReaders.locationTags(try IndependentReaders.exiftool(givenFile)).isEmpty)
        // --location-from-photo: the EXIF position in the post, the bytes as they are (even a HEIC's).
        for name in ["gps.webp", "gps.heic"] {
            let (shared, sharedFile) = try await post(name, "--location-from-photo")
            let location = try #require(shared["location"] as? [String: Any], "\(name): \(shared)")
            #expect((location["latitude"] as? Double).map { abs($0 - -33.8599722) < 1e-7 } == true, "\(location)")
            #expect((location["longitude"] as? Double).map { abs($0 - 151.2111111) < 1e-7 } == true, "\(location)")
            #expect(
                try Data(contentsOf: sharedFile) == Data(contentsOf: URL(fileURLWithPath: cli.fixture("media/\(name)")))
            )
        }
        // --keep-metadata: the bytes as they are, no location in the post; a format that cannot be cleaned is taken.
        for name in ["gps.png", "gps.heic", "gps-xmp.gif"] {
            let (kept, keptFile) = try await post(name, "--keep-metadata")
            #expect(kept["location"] is NSNull)
            #expect(
                try Data(contentsOf: keptFile) == Data(contentsOf: URL(fileURLWithPath: cli.fixture("media/\(name)")))
            )
        }
        // Nothing left behind in photos/tmp.
        let temporary = try FileManager.default.contentsOfDirectory(
            atPath: cli.data.appendingPathComponent("photos/tmp").path
        )
        #expect(temporary.isEmpty, "\(temporary)")
    }

    @Test("the same photo posted twice is stored once")
    func photoStoredOnce() async throws {
        let cli = CLI()
        defer { cli.remove() }
        try await cli.ok("init")
        try await cli.ok("post", cli.fixture("lake.png"), "--caption", "one")
        try await cli.ok("post", cli.fixture("lake.png"), "--caption", "two")
        let status = try await cli.run("status", "--json").json()
        #expect((status["store"] as? [String: Any])?["photos"] as? Int == 1)
        #expect(try await cli.feedIDs().count == 2)
    }
}
