import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Reactions in the store: each author's latest counts, in any order; they go with their post")
struct ReactionStoreTests {
    /// Author 0's post and a comment on it by author 2; author 1 reacts ❤️ then 😂 (later); author 2 reacts ❤️.
    struct Scene {
        var factory = RecordFactory(authorCount: 3, seed: 33)
        let post: VerifiedRecord
        let comment: VerifiedRecord
        let firstOfOne: VerifiedRecord
        let laterOfOne: VerifiedRecord
        let ofTwo: VerifiedRecord
        var id: PostID { PostID(post.id) }

        init() {
            post = factory.post(by: 0)
            comment = factory.make(.comment(post: PostID(post.id), text: "what a view"), by: 2)
            firstOfOne = factory.make(Reaction(post: PostID(post.id), emoji: .heart).body, by: 1)
            laterOfOne = factory.make(Reaction(post: PostID(post.id), emoji: .laugh).body, by: 1)
            ofTwo = factory.make(Reaction(post: PostID(post.id), emoji: .heart).body, by: 2)
        }
    }

    static func counts(_ store: ContinuumStore, _ target: RecordID) async throws -> [String] {
        try await store.reactions(to: target).counts.map { "\($0.emoji.name) \($0.count)" }
    }

    @Test("in all 24 orders of the post and three reactions: ❤️ 1, 😂 1 (author 1's later one replaced its first)")
    func latestInEveryOrder() async throws {
        let scene = Scene()
        let orders = CommentsGoWithPostTests.permutations([
            scene.post, scene.firstOfOne, scene.laterOfOne, scene.ofTwo,
        ])
        for order in orders {
            let temporary = try TemporaryStore()
            for record in order { _ = try await temporary.store.ingest([record]) }
            #expect(try await Self.counts(temporary.store, scene.post.id) == ["heart 1", "laugh 1"])
            let feed = try await temporary.store.feed(FeedQuery())
            #expect(feed.posts.first?.reactions.total == 2)
        }
    }

    @Test("taken back (code 0): the author counts no more; a later reaction counts again")
    func takenBack() async throws {
        var scene = Scene()
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([scene.post, scene.firstOfOne, scene.ofTwo])
        #expect(try await Self.counts(temporary.store, scene.post.id) == ["heart 2"])
        _ = try await temporary.store.ingest([scene.factory.make(Reaction(post: scene.id, emoji: .none).body, by: 2)])
        #expect(try await Self.counts(temporary.store, scene.post.id) == ["heart 1"])
        _ = try await temporary.store.ingest([scene.factory.make(Reaction(post: scene.id, emoji: .sad).body, by: 2)])
        #expect(try await Self.counts(temporary.store, scene.post.id) == ["heart 1", "sad 1"])
    }

    @Test("a reaction to a comment counts on the comment, not on its post; shown by `post`")
    func onComment() async throws {
        var scene = Scene()
        let temporary = try TemporaryStore()
        let reaction = scene.factory.make(
            Reaction(post: scene.id, comment: CommentID(scene.comment.id), emoji: .thanks).body,
            by: 0
        )
        _ = try await temporary.store.ingest([reaction, scene.comment, scene.post])
        let detail = try #require(try await temporary.store.post(scene.id))
        #expect(detail.post.reactions.total == 0)
        #expect(detail.comments.first?.reactions.counts.map(\.emoji) == [.thanks])
        #expect(detail.comments.first?.reactions.counts.map(\.count) == [1])
    }

    @Test("naming a comment of another post, or a comment as its post: kept in its log, counted nowhere")
    func wrongPost() async throws {
        var scene = Scene()
        let other = scene.factory.post(by: 0)
        let temporary = try TemporaryStore()
        let wrongComment = scene.factory.make(
            Reaction(post: PostID(other.id), comment: CommentID(scene.comment.id), emoji: .heart).body,
            by: 1
        )
        let commentAsPost = scene.factory.make(
            Reaction(post: PostID(unchecked: scene.comment.id.bytes), emoji: .heart).body,
            by: 1
        )
        _ = try await temporary.store.ingest([scene.post, scene.comment, other, wrongComment, commentAsPost])
        #expect(try await temporary.store.reactions(to: scene.comment.id).total == 0)
        #expect(try await temporary.store.reactions(to: other.id).total == 0)
        let held = Set(try await temporary.store.allRecordBytes())
        #expect(held.contains(wrongComment.bytes) && held.contains(commentAsPost.bytes))
    }

    @Test("the post's delete by its author erases every reaction to it and its comments, in every order")
    func goWithPost() async throws {
        var scene = Scene()
        let onComment = scene.factory.make(
            Reaction(post: scene.id, comment: CommentID(scene.comment.id), emoji: .thanks).body,
            by: 1
        )
        let delete = scene.factory.make(.delete(targets: [scene.post.id]), by: 0)
        let reactions = [scene.firstOfOne, scene.ofTwo, onComment]
        for order in CommentsGoWithPostTests.permutations([scene.post, scene.firstOfOne, onComment, delete]) {
            let temporary = try TemporaryStore()
            _ = try await temporary.store.ingest([scene.comment, scene.ofTwo])
            for record in order { _ = try await temporary.store.ingest([record]) }
            // Every reaction is held as its header alone: the content (salt and code) is gone.
            let held = Set(try await temporary.store.allRecordBytes())
            for reaction in reactions {
                #expect(held.contains(reaction.record.headerBytes))
                #expect(!held.contains(reaction.bytes))
            }
            #expect(try await temporary.store.reactions(to: scene.post.id).total == 0)
            // A copy with its content, sent again later, is dropped.
            _ = try await temporary.store.ingest([scene.firstOfOne])
            #expect(!Set(try await temporary.store.allRecordBytes()).contains(scene.firstOfOne.bytes))
        }
    }

    @Test("a later reaction naming the comment under another post, or a comment as its post, never hides a valid one")
    func brokenNeverHides() async throws {
        var scene = Scene()
        let other = scene.factory.post(by: 0)
        let comment = CommentID(scene.comment.id)
        let valid = scene.factory.make(
            Reaction(post: scene.id, comment: comment, emoji: .heart).body,
            by: 1,
            at: Timestamp(milliseconds: 1_800_000_000_000)
        )
        let otherPost = scene.factory.make(
            Reaction(post: PostID(other.id), comment: comment, emoji: .sad).body,
            by: 1,
            at: Timestamp(milliseconds: 1_800_000_001_000)
        )
        let commentAsPost = scene.factory.make(
            Reaction(post: PostID(unchecked: comment.bytes), emoji: .laugh).body,
            by: 1,
            at: Timestamp(milliseconds: 1_800_000_002_000)
        )
        let orders = CommentsGoWithPostTests.permutations([scene.comment, other, valid, otherPost, commentAsPost])
        #expect(orders.count == 120)
        for order in orders {
            let temporary = try TemporaryStore()
            _ = try await temporary.store.ingest([scene.post])
            for record in order { _ = try await temporary.store.ingest([record]) }
            #expect(try await Self.counts(temporary.store, scene.comment.id) == ["heart 1"])
            #expect(try await temporary.store.post(scene.id)?.comments.first?.reactions.total == 1)
            #expect(try await temporary.store.reactions(to: other.id).total == 0)
        }
    }

    @Test("a record of kind 13 that breaks its rules (code 7, or 3 bytes of data) is kept in its log, counts nowhere")
    func inert() async throws {
        var scene = Scene()
        let temporary = try TemporaryStore()
        let code7 = scene.factory.make(.opaque(OpaqueReferences(code: 13, context: scene.id), payload: [7]), by: 1)
        let data3 = scene.factory.make(
            .opaque(OpaqueReferences(code: 13, context: scene.id, data: [1, 2, 3]), payload: [1]),
            by: 1
        )
        let report = try await temporary.store.ingest([scene.post, code7, data3])
        #expect(report.stored.count == 3 && report.ignored.isEmpty)
        #expect(try await temporary.store.reactions(to: scene.post.id).total == 0)
        let held = Set(try await temporary.store.allRecordBytes())
        #expect(held.contains(code7.bytes) && held.contains(data3.bytes))
    }

    @Test("blocking an author erases its reactions here")
    func blocked() async throws {
        let scene = Scene()
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([scene.post, scene.firstOfOne, scene.laterOfOne, scene.ofTwo])
        _ = try await temporary.store.block(scene.factory.authors[1].author, by: NodeIdentity.generate())
        #expect(try await Self.counts(temporary.store, scene.post.id) == ["heart 1"])
        #expect(!Set(try await temporary.store.allRecordBytes()).contains(scene.laterOfOne.bytes))
    }

    @Test("the post's author is notified of a reaction, once; not of one taken back, nor of one to another's post")
    func notifies() async throws {
        var scene = Scene()
        let temporary = try TemporaryStore()
        let policy = NotificationPolicy(me: scene.factory.authors[0].author)
        _ = try await temporary.store.ingest([scene.post], notifying: policy)
        _ = try await temporary.store.ingest([scene.firstOfOne], notifying: policy)
        _ = try await temporary.store.ingest([scene.firstOfOne], delivery: .catchUp, notifying: policy)
        let taken = scene.factory.make(Reaction(post: scene.id, emoji: .none).body, by: 1)
        let theirs = scene.factory.post(by: 2)
        let toTheirs = scene.factory.make(Reaction(post: PostID(theirs.id), emoji: .sad).body, by: 1)
        _ = try await temporary.store.ingest([taken, theirs, toTheirs], notifying: policy)
        // A reaction to this node's comment names the comment.
        let own = scene.factory.make(.comment(post: scene.id, text: "my own comment"), by: 0)
        let toOwn = scene.factory.make(
            Reaction(post: scene.id, comment: CommentID(own.id), emoji: .thanks).body,
            by: 2
        )
        _ = try await temporary.store.ingest([own, toOwn], notifying: policy)
        let notifications = try await temporary.store.notifications()
        #expect(notifications.map(\.kind) == [.reaction, .reaction])
        #expect(notifications.map(\.text) == ["🙏", "❤️"])
        #expect(notifications.map(\.reactedComment) == [CommentID(own.id), nil])
        #expect(notifications.last?.author == scene.factory.authors[1].author)
        #expect(notifications.allSatisfy { $0.post == scene.id })
    }
}
