import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import GRDB
import Testing

/// A delete erases, on every node that holds the record: PROTOCOL.md §2.6.
extension SyncIntegrationTests {
    /// Run inside `SyncIntegrationTests`, one test at a time with it, so that the real nodes of both do not compete for
    /// the machine's two cores.
    @Suite("Erasure across real nodes: a delete leaves no text, photo or thumbnail behind", .serialized)
    struct ErasureTests {
        @Test(
            "a deleted post, the comments on it and a deleted comment are erased on B and C; D, joining later, gets headers"
        )
        func deleteErases() async throws {
            let a = try await TestNode("a")
            let b = try await TestNode("b")
            let c = try await TestNode("c")
            let d = try await TestNode("d")
            defer { for node in [a, b, c, d] { node.remove() } }
            // Unique, lowercase ASCII texts, so that their bytes can be looked for in the database files.
            let token = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let caption = "erasable caption \(token)"
            let commentText = "erasable comment \(token)"
            let editedCaption = "erasable edit \(token)"
            let keptCaption = "kept caption \(token)"
            // Comments by others on the post that A deletes: they go with it (§2.6).
            let onPost = ["b's comment on the deleted post \(token)", "c's comment on the deleted post \(token)"]

            try await a.start()
            try await b.start(peers: [a])
            try await c.start(peers: [a])
            let post = try await a.cli("post", a.fixture("waterfall.jpg"), "--caption", caption)
            try await a.cli("edit", post, "--caption", editedCaption)
            let kept = try await a.cli("post", a.fixture("lake.png"), "--caption", keptCaption)
            let comment = try await b.cli("comment", kept, commentText)
            try await b.cli("comment", post, onPost[0])
            try await c.cli("comment", post, onPost[1])
            // Reactions by B and C to the post: they go with it too (§2.9).
            try await b.cli("react", post, "heart")
            try await c.cli("react", post, "😂")
            let photo = try #require(try await a.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.sha256 })
            try await eventually("B and C have both posts, photos and thumbnails, and the comment") {
                for node in [b, c] {
                    let here = try await node.withStore { store in
                        let detail = try await store.post(PostID(hex: kept)!)
                        let deleted = try await store.post(PostID(hex: post)!)
                        return deleted?.post.photo.available == true && deleted?.comments.count == 2
                            && detail?.comments.count == 1
                    }
                    guard here, !Self.thumbnails(of: photo, on: node).isEmpty else { return false }
                }
                let reacted = try await a.withStore { try await $0.post(PostID(hex: post)!)?.post.reactions }
                return reacted?.counts.map(\.count) == [1, 1] && reacted?.counts.map(\.emoji) == [.heart, .laugh]
            }
            #expect(try await a.cli("notifications").contains("reacted ❤️ to"), "A is told of B's reaction")
            for node in [a, b, c] {
                let bytes = try Self.databaseBytes(node)
                #expect(bytes.contains(caption: editedCaption), "\(node.name) held the text first")
                #expect(onPost.allSatisfy { bytes.contains(caption: $0) }, "\(node.name) held the comments first")
            }

            try await a.cli("delete", post)
            try await b.cli("delete", comment)
            try await eventually("the deletes reached every node", timeout: .seconds(60)) {
                for node in [a, b, c] {
                    let gone = try await node.withStore { store in
                        let deletedPost = try await store.post(PostID(hex: post)!)
                        let keptPost = try await store.post(PostID(hex: kept)!)
                        return deletedPost == nil && keptPost?.comments.isEmpty == true
                    }
                    guard gone else { return false }
                }
                return true
            }
            for node in [a, b, c] {
                // No photo file, no thumbnail, no partial download.
                let file = node.data.appendingPathComponent("photos/\(photo.hex.prefix(2))/\(photo.hex)")
                try await eventually("\(node.name): the photo file is gone") {
                    !FileManager.default.fileExists(atPath: file.path)
                }
                #expect(Self.thumbnails(of: photo, on: node).isEmpty, "\(node.name) kept a thumbnail")
                // The API says 404 for the photo and its thumbnail.
                let response = try await node.http.get("/api/photos/\(photo.hex)")
                #expect(response.status == 404, "\(node.name): GET photo answered \(response.status)")
                let thumbnail = try await node.http.get("/api/photos/\(photo.hex)/thumbnail")
                #expect(thumbnail.status == 404, "\(node.name): GET thumbnail answered \(thumbnail.status)")
                // The texts are in no table and no index: searched for in the raw bytes of the database and its WAL.
                try await eventually("\(node.name): no erased text in the database files") {
                    let bytes = try Self.databaseBytes(node)
                    return !bytes.contains(caption: caption) && !bytes.contains(caption: editedCaption)
                        && !bytes.contains(caption: commentText) && !onPost.contains { bytes.contains(caption: $0) }
                }
                #expect(try Self.databaseBytes(node).contains(caption: keptCaption), "\(node.name) keeps the live post")
                // Search finds nothing; the live post is untouched.
                #expect(!(try await node.cli("search", token, "--json")).contains(post))
                #expect(try await node.cli("search", token, "--json").contains(kept))
                #expect(
                    try await node.cli("status", "--json").contains("\"photos\" : 1"),
                    "\(node.name) counts live photos"
                )
            }

            // D joins after the deletes: it gets the post, its edit and the comment as headers alone, and verifies the
            // whole of A's and B's logs.
            try await d.start(peers: [b])
            try await eventually("D caught up") { try await d.clock() == (try await a.clock()) }
            let held = try await d.withStore { try await $0.allRecordBytes() }.map { try SignedRecord(bytes: $0) }
            for record in held { _ = try record.verify() }
            let erasedIDs = held.filter(\.isHeaderOnly).map(\.id.hex)
            #expect(erasedIDs.contains(post) && erasedIDs.contains(comment), "headers alone: \(erasedIDs)")
            #expect(
                held.filter(\.isHeaderOnly).count == 7,
                "the post, its edit, the comment deleted, the two comments on the post and the two reactions to it"
            )
            let dBytes = try Self.databaseBytes(d)
            #expect(!dBytes.contains(caption: caption) && !dBytes.contains(caption: editedCaption))
            #expect(!dBytes.contains(caption: commentText) && dBytes.contains(caption: keptCaption))
            #expect(!onPost.contains { dBytes.contains(caption: $0) })
            #expect(
                !FileManager.default.fileExists(
                    atPath: d.data.appendingPathComponent("photos/\(photo.hex.prefix(2))/\(photo.hex)").path
                )
            )
            for node in [a, b, c, d] { try await node.stop() }
        }

        @Test(
            "a photo replaced by an edit is erased on every node; followers are notified once; a late node gets the new one"
        )
        func replacedPhotoErased() async throws {
            let a = try await TestNode("a")
            let b = try await TestNode("b")
            let c = try await TestNode("c")
            defer { for node in [a, b, c] { node.remove() } }
            try await a.start()
            try await b.start(peers: [a])
            let post = try await a.cli("post", a.fixture("waterfall.jpg"), "--caption", "the first photo")
            let old = try #require(try await a.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.sha256 })
            try await eventually("B has the photo and its thumbnail") {
                let here = try await b.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.available == true }
                return here && !Self.thumbnails(of: old, on: b).isEmpty
            }
            try await b.cli("follow", post)

            let edit = try await a.cli("edit", post, "--photo", a.fixture("forest.webp"), "--location", "1.5,2.5")
            let new = try #require(try await a.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.sha256 })
            #expect(new != old)
            try await eventually("B shows the new photo, whole") {
                try await b.withStore { try await $0.post(PostID(hex: post)!)?.post.photo }.map {
                    $0.sha256 == new && $0.available
                } == true
            }
            for node in [a, b] {
                let file = node.data.appendingPathComponent("photos/\(old.hex.prefix(2))/\(old.hex)")
                try await eventually("\(node.name): the replaced photo's file is gone") {
                    !FileManager.default.fileExists(atPath: file.path) && Self.thumbnails(of: old, on: node).isEmpty
                }
                #expect(try await node.http.get("/api/photos/\(old.hex)").status == 404, "\(node.name)")
                #expect(try await node.http.get("/api/photos/\(new.hex)").status == 200, "\(node.name)")
                let shown = try await node.cli("show", post, "--json")
                #expect(shown.contains(new.hex) && shown.contains("\"latitude\" : 1.5"), "\(node.name): \(shown)")
            }
            // B follows the post: one notification for the edit, whatever path it came by.
            let notes = try await b.cli("notifications", "--json")
            #expect(notes.components(separatedBy: edit).count - 1 == 1, "one notification for the edit: \(notes)")
            // C joins afterwards and never fetches the replaced photo.
            try await c.start(peers: [b])
            try await eventually("C has the new photo") {
                try await c.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.available } == true
            }
            #expect(
                !FileManager.default.fileExists(
                    atPath: c.data.appendingPathComponent("photos/\(old.hex.prefix(2))/\(old.hex)").path
                )
            )
            #expect(Self.thumbnails(of: old, on: c).isEmpty)
            for node in [a, b, c] { try await node.stop() }
        }

        @Test("a photo on its way when its post is deleted stops coming, and leaves no file, partial or thumbnail")
        func transferStoppedByErasure() async throws {
            let a = try await TestNode("a")
            let b = try await TestNode("b")
            defer { for node in [a, b] { node.remove() } }
            let image = a.data.appendingPathComponent("big.png")
            try SyncIntegrationTests.bigPNG(megabytes: 8, at: image)
            let post = try await a.cli("post", image.path, "--caption", "big, and soon deleted")
            let hash = AssetHash.of(try Data(contentsOf: image))
            // A sends slowly (fault injection): 32 chunks of 256 KiB at 500 ms each would take 16 s.
            try await a.start(extra: ["--test-photo-chunk-delay-ms", "500"])
            try await b.start(peers: [a])
            let partial = b.data.appendingPathComponent("photos/tmp/\(hash.hex).partial")
            try await eventually("part of the photo arrived on B", timeout: .seconds(90)) {
                let size = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0
                return size >= 512 << 10
            }
            let deleted = ContinuousClock.now
            try await a.cli("delete", post)
            // B stops the transfer when it learns of the delete (within a second), or A stops sending (every 4 MiB);
            // whichever comes first, long before the 16 s the photo would take.
            try await eventually("the transfer stopped", timeout: .seconds(12)) {
                b.logText.contains("a photo was erased while it was coming")
                    || b.logText.contains("the peer does not have the photo (any more)")
            }
            #expect(ContinuousClock.now - deleted < .seconds(12))
            try await eventually("nothing of the photo is left on B") {
                let files = [partial, b.data.appendingPathComponent("photos/\(hash.hex.prefix(2))/\(hash.hex)")]
                return files.allSatisfy { !FileManager.default.fileExists(atPath: $0.path) }
                    && Self.thumbnails(of: hash, on: b).isEmpty
            }
            #expect(try await b.withStore { try await !$0.hasPhoto(hash) })
            for node in [a, b] { try await node.stop() }
        }

        @Test(
            "a phone photo posted without its location reaches a peer without GPS tags, its pixels and orientation kept"
        )
        func locationStaysHomeOnPeers() async throws {
            let a = try await TestNode("a")
            let b = try await TestNode("b")
            defer { for node in [a, b] { node.remove() } }
            try await a.start()
            try await b.start(peers: [a])
            let original = URL(fileURLWithPath: a.fixture("media/rotated-gps.jpg"))
            #expect(!IndependentReaders.locationTags(try IndependentReaders.exiftool(original)).isEmpty)
            let post = try await a.cli("post", original.path, "--caption", "from the phone")
            let photo = try #require(try await a.withStore { try await $0.post(PostID(hex: post)!)?.post })
            #expect(photo.location == nil)
            try await eventually("B has the photo") {
                try await b.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.available } == true
            }
            for node in [a, b] {
                let file = try await node.photoFile(photo.photo.sha256)
                let tags = try IndependentReaders.exiftool(file)
                #expect(IndependentReaders.locationTags(tags).isEmpty, "\(node.name): \(tags)")
                #expect(tags["IFD0:Orientation"] as? Int == 6, "\(node.name): orientation kept")
                let same = try IndependentReaders.samePixels(file, original)
                #expect(same, "\(node.name): the pixels are the original's")
            }
            for node in [a, b] { try await node.stop() }
        }

        /// The node's thumbnails of a photo: its own and a peer's.
        static func thumbnails(of photo: AssetHash, on node: TestNode) -> [String] {
            let shard = node.data.appendingPathComponent("photos/thumbs/\(photo.hex.prefix(2))")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: shard.path)) ?? []
            return names.filter { $0.hasPrefix(photo.hex) }
        }

        @Test(
            "a delete whose WAL a reader held past the command's wait is finished by the running node, once the reader lets go"
        )
        func truncationHandedToTheNode() async throws {
            let a = try await TestNode("a")
            defer { a.remove() }
            try await a.start()
            let caption = "handed to the node \(UUID().uuidString.lowercased())"
            let post = try await a.cli("post", a.fixture("lake.png"), "--caption", caption)
            // A reader of the database from outside the command (as the node's sessions are), in a transaction that
            // began after the post: its snapshot holds the post's frames of the WAL, which cannot be truncated under it.
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true  // The transaction outlives this access, on purpose.
            let path = a.data.appendingPathComponent("continuum.sqlite").path
            let reader = try DatabaseQueue(path: path, configuration: configuration)
            try await reader.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN")
                #expect(
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM post WHERE caption = ?", arguments: [caption]) == 1
                )
            }
            try await a.cli("delete", post)
            #expect(try Self.databaseBytes(a).contains(caption: caption), "the reader kept the WAL, and the text in it")
            try await reader.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
            // The command has exited: only the node, which it told, can truncate the WAL now.
            try await eventually("the node truncated the WAL") {
                !(try Self.databaseBytes(a).contains(caption: caption))
            }
            #expect(try await a.withStore { try await $0.post(PostID(hex: post)!) } == nil, "the post is deleted")
            try reader.close()
        }

        /// The raw bytes of the node's database file and its write-ahead log.
        static func databaseBytes(_ node: TestNode) throws -> Data {
            var bytes = Data()
            for suffix in ["", "-wal"] {
                let url = node.data.appendingPathComponent("continuum.sqlite\(suffix)")
                if let data = try? Data(contentsOf: url) { bytes.append(data) }
            }
            return bytes
        }
    }
}

extension Data {
    /// Whether the UTF-8 of `caption` occurs in these bytes.
    fileprivate func contains(caption: String) -> Bool {
        range(of: Data(caption.utf8)) != nil
    }
}
