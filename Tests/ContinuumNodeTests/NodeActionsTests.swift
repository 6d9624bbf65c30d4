import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging
import Testing

/// What the sync engine was told, in order.
actor HeardEngine: SyncNotifying {
    private(set) var heard: [String] = []

    func recordsWritten() { heard.append("records") }
    func followsChanged() { heard.append("follows") }
}

/// A store in a fresh directory, the actions on it (with the real photo checks and thumbnails), and two authors:
/// this node (0) and another (1).
final class Fixture: Sendable {
    let directory: DataDirectory
    let store: ContinuumStore
    let engine = HeardEngine()
    let thumbnails: ThumbnailService
    let actions: NodeActions
    let me: NodeIdentity
    let factory: RecordFactory

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-node-\(UUID().uuidString)")
        directory = DataDirectory(url: url)
        store = try ContinuumStore.open(directory, logger: Logger(label: "test"))
        thumbnails = ThumbnailService(store: store, logger: Logger(label: "test"))
        actions = NodeActions(
            store: store,
            engine: engine,
            inspector: MediaInspector(thumbnails: thumbnails),
            thumbnails: thumbnails,
            thumbnailing: .beforeReturning
        )
        factory = RecordFactory(authorCount: 2)
        me = factory.authors[0]
    }

    deinit {
        try? store.close()
        try? FileManager.default.removeItem(at: directory.url)
    }

    func photo(_ name: String) throws -> PhotoSource {
        let url = NodeBinary.fixtures.appendingPathComponent(name)
        return .file(url, contents: try Data(contentsOf: url))
    }

    /// A post of the other author's, stored as if a peer had sent it.
    func foreignPost() async throws -> PostID {
        var factory = self.factory
        let record = factory.post(by: 1)
        _ = try await store.ingest([record])
        return PostID(record.id)
    }
}

@Suite("NodeActions: each user action, once for both front ends")
struct NodeActionsTests {
    @Test("a post: checked, stored, followed, its thumbnail made, the engine told of records and follows")
    func post() async throws {
        let fixture = try Fixture()
        let id = try await fixture.actions.post(
            NewPost(photo: try fixture.photo("lake.png"), caption: "Lake", location: Coordinate(parsing: "1.5,2.5")),
            by: fixture.me
        )
        let post = try #require(try await fixture.store.post(id)?.post)
        #expect(post.caption == "Lake")
        #expect(post.photo.available && post.photo.mediaType == .png)
        #expect(post.location == Coordinate(parsing: "1.5,2.5"))
        #expect(try await fixture.store.isFollowing(id))
        #expect(fixture.thumbnails.hasThumbnail(post.photo.sha256))
        #expect(await fixture.engine.heard == ["records", "follows"])
    }

    @Test("an upload with a GPS position: a copy without it is stored, the post signed over its hash, no location")
    func uploadWithoutLocation() async throws {
        let fixture = try Fixture()
        let temporary = try fixture.store.assets.makeTemporaryFile()
        let bytes = try Data(contentsOf: NodeBinary.fixtures.appendingPathComponent("waterfall.jpg"))
        try bytes.write(to: temporary)
        let original = AssetHash.of(bytes)
        let draft = NewPost(
            photo: .upload(temporary, sha256: original, bytes: UInt64(bytes.count)),
            caption: "Waterfall"
        )
        let id = try await fixture.actions.post(draft, by: fixture.me)
        let post = try #require(try await fixture.store.post(id)?.post)
        #expect(post.location == nil)
        let originalStored = try await fixture.store.hasPhoto(original)
        #expect(post.photo.sha256 != original && !originalStored)
        let stored = try Data(contentsOf: fixture.store.assets.url(for: post.photo.sha256))
        #expect(AssetHash.of(stored) == post.photo.sha256 && post.photo.bytes == UInt64(stored.count))
        #expect(try MetadataCleaner.locationTags(in: fixture.store.assets.url(for: post.photo.sha256)).isEmpty)
        // The upload's own file is the caller's to remove; nothing else is left in photos/tmp.
        let left = try FileManager.default.contentsOfDirectory(atPath: fixture.store.assets.temporaryDirectory.path)
        #expect(left == [temporary.lastPathComponent])

        // Shared from the photo: the EXIF position, and the bytes as they are.
        let shared = try await fixture.actions.post(
            NewPost(photo: try fixture.photo("waterfall.jpg"), caption: "Here", locationFromPhoto: true),
            by: fixture.me
        )
        let sharedPost = try #require(try await fixture.store.post(shared)?.post)
        #expect(sharedPost.photo.sha256 == original)
        let location = try #require(sharedPost.location)
        #expect(abs(location.latitude - (48 + 51 / 60 + 24 / 3600)) < 1e-6, "\(location)")
    }

    @Test("refusals store nothing: no position to share; a location that cannot be removed")
    func locationRefusals() async throws {
        let fixture = try Fixture()
        let before = try await fixture.store.counts()
        await #expect(throws: PhotoRefusal.self) {
            try await fixture.actions.post(
                NewPost(photo: try fixture.photo("lake.png"), caption: "Lake", locationFromPhoto: true),
                by: fixture.me
            )
        }
        await #expect {
            try await fixture.actions.post(
                NewPost(photo: try fixture.photo("media/gps.heic"), caption: "HEIC"),
                by: fixture.me
            )
        } throws: { error in
            (error as? MediaError)?.kind == .locationNotRemovable
        }
        #expect(try await fixture.store.counts() == before)
        let left = try FileManager.default.contentsOfDirectory(atPath: fixture.store.assets.temporaryDirectory.path)
        #expect(left.isEmpty, "\(left)")
        // Kept as it is when asked.
        let kept = try await fixture.actions.post(
            NewPost(photo: try fixture.photo("media/gps.heic"), caption: "HEIC", keepMetadata: true),
            by: fixture.me
        )
        let heic = try Data(contentsOf: NodeBinary.fixtures.appendingPathComponent("media/gps.heic"))
        #expect(try await fixture.store.post(kept)?.post.photo.sha256 == AssetHash.of(heic))
    }

    @Test("an upload's temporary file is moved into the store; without autoFollow nothing is followed")
    func upload() async throws {
        let fixture = try Fixture()
        let temporary = try fixture.store.assets.makeTemporaryFile()
        let bytes = try Data(contentsOf: NodeBinary.fixtures.appendingPathComponent("waterfall.jpg"))
        try bytes.write(to: temporary)
        let hash = AssetHash.of(bytes)
        let draft = NewPost(
            photo: .upload(temporary, sha256: hash, bytes: UInt64(bytes.count)),
            caption: "Waterfall",
            takenAt: Timestamp(milliseconds: 1_721_000_000_000),
            autoFollow: false,
            keepMetadata: true
        )
        let before = Timestamp.now()
        let id = try await fixture.actions.post(draft, by: fixture.me)
        #expect(!FileManager.default.fileExists(atPath: temporary.path))
        #expect(try await fixture.store.hasPhoto(hash))
        // Posted now; taken when the draft says.
        let stored = try #require(try await fixture.store.post(id)?.post)
        #expect(stored.createdAt >= before && stored.createdAt <= Timestamp.now())
        #expect(stored.photo.takenAt == Timestamp(milliseconds: 1_721_000_000_000))
        #expect(!(try await fixture.store.isFollowing(id)))
        #expect(await fixture.engine.heard == ["records"])
    }

    @Test("a refused post stores nothing and tells nobody")
    func refusedPost() async throws {
        let fixture = try Fixture()
        let long = NewPost(photo: try fixture.photo("lake.png"), caption: String(repeating: "a", count: 2049))
        await #expect(throws: RecordRefused.self) { try await fixture.actions.post(long, by: fixture.me) }
        let text = NewPost(photo: try fixture.photo("not-an-image.jpg"), caption: "x")
        do {
            _ = try await fixture.actions.post(text, by: fixture.me)
            Issue.record("a text file was posted")
        } catch PhotoRefusal.notAnImage(let why) {
            #expect(why.contains("not an image"))
        }
        let truncated = NewPost(photo: try fixture.photo("truncated.jpg"), caption: "x")
        do {
            _ = try await fixture.actions.post(truncated, by: fixture.me)
            Issue.record("a truncated photo was posted")
        } catch PhotoRefusal.corrupt(let why) {
            #expect(why.contains("truncated"))
        }
        #expect(try await fixture.store.counts().records == 0)
        #expect(try await fixture.store.counts().photos == 0)
        #expect(await fixture.engine.heard.isEmpty)
    }

    @Test("a comment, an edit and a deletion of one's own; another author's post is refused, naming its owner")
    func ownership() async throws {
        let fixture = try Fixture()
        let own = try await fixture.actions.post(
            NewPost(photo: try fixture.photo("lake.png"), caption: "Lake", autoFollow: false),
            by: fixture.me
        )
        let foreign = try await fixture.foreignPost()
        let comment = try await fixture.actions.comment(on: foreign, text: "Nice", by: fixture.me)
        _ = try await fixture.actions.edit(own, caption: "Lake at dawn", by: fixture.me)
        #expect(try await fixture.store.post(own)?.post.caption == "Lake at dawn")
        do {
            _ = try await fixture.actions.edit(foreign, caption: "mine now", by: fixture.me)
            Issue.record("another author's post was edited")
        } catch let error as StoreError {
            #expect(error.code == .notOwner)
            #expect(error.message.contains("post \(foreign.short) belongs to"))
        }
        let targets = [
            try await fixture.store.resolveTarget(own.hex), try await fixture.store.resolveTarget(foreign.hex),
        ]
        await #expect(throws: StoreError.self) { try await fixture.actions.delete(targets, by: fixture.me) }
        #expect(try await fixture.store.post(own) != nil)
        let mine = [try await fixture.store.resolveTarget(own.hex), try await fixture.store.resolveTarget(comment.hex)]
        let deletion = try await fixture.actions.delete(mine, by: fixture.me)
        #expect(deletion.targets == [own.record, comment.record].sorted())
        #expect(deletion.records.count == 1)
        #expect(try await fixture.store.post(own) == nil)
        #expect(try await fixture.store.post(foreign)?.comments.isEmpty == true)
        #expect(await fixture.engine.heard == ["records", "records", "records", "records"])
    }

    @Test("follow, unfollow and toggle say what changed and tell the engine each time")
    func follows() async throws {
        let fixture = try Fixture()
        let post = try await fixture.foreignPost()
        #expect(try await fixture.actions.follow(post))
        #expect(!(try await fixture.actions.follow(post)))
        #expect(try await fixture.actions.unfollow(post))
        #expect(!(try await fixture.actions.unfollow(post)))
        #expect(try await fixture.actions.toggleFollow(post))
        #expect(!(try await fixture.actions.toggleFollow(post)))
        #expect(await fixture.engine.heard == Array(repeating: "follows", count: 6))
    }

    @Test("notifications are marked read all or none")
    func markRead() async throws {
        let fixture = try Fixture()
        let post = try await fixture.actions.post(
            NewPost(photo: try fixture.photo("lake.png"), caption: "Lake"),
            by: fixture.me
        )
        var factory = fixture.factory
        let comment = factory.make(.comment(post: post, text: "Great light"), by: 1)
        _ = try await fixture.store.ingest([comment], notifying: NotificationPolicy(me: fixture.me.author))
        let number = try #require(try await fixture.store.notifications().first?.id)
        await #expect(throws: StoreError.self) { try await fixture.actions.markRead(.numbered([number, 999])) }
        #expect(try await fixture.store.unreadNotificationCount() == 1)
        let marks = try await fixture.actions.markRead(.numbered([number]))
        #expect(marks.marked == 1 && marks.unread == 0)
        #expect(try await fixture.actions.markRead(.all).marked == 0)
    }
}

@Suite("Reactions given by this node")
struct ReactionActionsTests {
    @Test("react, change, take back, ten times over, and after the clock stepped back: the last one always counts")
    func lastCounts() async throws {
        let fixture = try Fixture()
        let post = try await fixture.foreignPost()
        let target = ContinuumStore.Target.post(post, author: fixture.factory.authors[1].author)
        let me = fixture.me.author
        for round in 0..<10 {
            _ = try await fixture.actions.react(to: target, with: .heart, by: fixture.me)
            _ = try await fixture.actions.react(to: target, with: .laugh, by: fixture.me)
            #expect(try await fixture.store.reactions(to: post.record, viewer: me).mine == .laugh, "round \(round)")
            _ = try await fixture.actions.react(to: target, with: .none, by: fixture.me)
            #expect(try await fixture.store.reactions(to: post.record, viewer: me).total == 0, "round \(round)")
        }
        // The clock stepped back an hour since this node's last reaction (signed an hour ahead): the next still wins.
        let ahead = Timestamp(milliseconds: Timestamp.now().milliseconds + 3_600_000)
        _ = try await fixture.store.append(Reaction(post: post, emoji: .sad).body, createdAt: ahead, by: fixture.me)
        #expect(try await fixture.store.reactions(to: post.record, viewer: me).mine == .sad)
        _ = try await fixture.actions.react(to: target, with: .thanks, by: fixture.me)
        #expect(try await fixture.store.reactions(to: post.record, viewer: me).mine == .thanks)
        // A reaction that breaks the kind's rules is never signed, whoever asks the store to.
        await #expect(throws: StoreError.self) {
            try await fixture.store.append(
                .opaque(OpaqueReferences(code: 13, context: post, data: [1, 2, 3]), payload: [1]),
                by: fixture.me
            )
        }
    }
}
