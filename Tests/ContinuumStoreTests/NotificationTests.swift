import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Follows and notifications in the store: who is notified of what, exactly once, whatever the path.
@Suite("Follows and notifications")
struct NotificationTests {
    /// Author 0 is this node; 1 and 2 are others.
    struct World {
        var factory = RecordFactory(authorCount: 3, seed: 42)
        let temporary: TemporaryStore
        var store: ContinuumStore { temporary.store }
        var policy: NotificationPolicy { NotificationPolicy(me: factory.authors[0].author) }

        init() throws { temporary = try TemporaryStore() }

        /// A post by author 1, stored and followed.
        mutating func followedPost() async throws -> PostID {
            let post = factory.post(by: 1)
            _ = try await store.ingest([post], notifying: policy)
            let id = PostID(post.id)
            #expect(try await store.follow(id))
            return id
        }
    }

    @Test("a comment on a followed post notifies once, whichever paths deliver it and in whatever order")
    func exactlyOnce() async throws {
        for paths in [[Delivery.push, .catchUp, .live], [.catchUp, .push], [.live, .live, .push]] {
            var world = try World()
            let post = try await world.followedPost()
            let comment = world.factory.make(.comment(post: post, text: "hello"), by: 2)
            for delivery in paths {
                _ = try await world.store.ingest([comment], delivery: delivery, notifying: world.policy)
            }
            let notifications = try await world.store.notifications()
            #expect(notifications.count == 1, "\(paths)")
            #expect(notifications.first?.record == comment.id)
            #expect(notifications.first?.delivery == paths[0], "the first path to deliver it is recorded")
            #expect(notifications.first?.whileOffline == (paths[0] == .catchUp))
            #expect(notifications.first?.text == "hello")
            #expect(notifications.first?.author == world.factory.authors[2].author)
        }
    }

    @Test("own records, unfollowed posts, and edits or deletions by someone else never notify")
    func whoIsNotified() async throws {
        var world = try World()
        let post = try await world.followedPost()
        let other = PostID(world.factory.post(by: 1).id)
        _ = try await world.store.ingest(world.factory.records.suffix(1), notifying: world.policy)
        let quiet = [
            world.factory.make(.comment(post: post, text: "my own comment"), by: 0),
            world.factory.make(.comment(post: other, text: "on a post nobody follows"), by: 2),
            world.factory.make(.edit(post: post, caption: "not the author's edit"), by: 2),
            world.factory.make(.delete(targets: [post.record]), by: 2),
        ]
        let report = try await world.store.ingest(quiet, notifying: world.policy)
        #expect(report.stored.count == 4)
        #expect(try await world.store.notifications().isEmpty)
        // Without a policy (tools, benchmarks) nobody is notified.
        let unnotified = world.factory.make(.comment(post: post, text: "no policy"), by: 2)
        _ = try await world.store.ingest([unnotified])
        #expect(try await world.store.notifications().isEmpty)
        // The author's edit and deletion do notify, once each.
        let edit = world.factory.make(.edit(post: post, caption: "the author's edit"), by: 1)
        let delete = world.factory.make(.delete(targets: [post.record]), by: 1)
        _ = try await world.store.ingest([edit, delete], notifying: world.policy)
        let kinds = try await world.store.notifications().map(\.kind)
        #expect(kinds == [.deleted, .edited])
        let following = try await world.store.following()
        #expect(following.map(\.post) == [post])
        #expect(following.first?.summary == nil, "a deleted post stays followed, shown as deleted")
        #expect(following.first?.unread == 2)
    }

    @Test("new posts notify only when asked to")
    func newPosts() async throws {
        var world = try World()
        let quiet = world.factory.post(by: 1)
        _ = try await world.store.ingest([quiet], notifying: world.policy)
        #expect(try await world.store.notifications().isEmpty)
        let loud = world.factory.post(by: 2)
        let mine = world.factory.post(by: 0)
        var policy = world.policy
        policy.newPosts = true
        _ = try await world.store.ingest([loud, mine], notifying: policy)
        let notifications = try await world.store.notifications()
        #expect(notifications.map(\.kind) == [.post])
        #expect(notifications.map(\.record) == [loud.id])
    }

    @Test("follow is idempotent, toggles, and refuses unknown or deleted posts without changing anything")
    func following() async throws {
        var world = try World()
        let post = try await world.followedPost()
        #expect(try await world.store.follow(post) == false, "following twice is following once")
        #expect(try await world.store.followedPosts() == [post])
        #expect(try await world.store.toggleFollow(post) == false)
        #expect(try await world.store.followedPosts().isEmpty)
        #expect(try await world.store.toggleFollow(post) == true)
        #expect(try await world.store.unfollow(post) == true)
        #expect(try await world.store.unfollow(post) == false)

        let unknown = PostID(world.factory.post(by: 2).id)
        await #expect(throws: StoreError.self) { try await world.store.follow(unknown) }
        let deleted = world.factory.post(by: 1)
        _ = try await world.store.ingest(
            [deleted, world.factory.make(.delete(targets: [deleted.id]), by: 1)],
            notifying: world.policy
        )
        await #expect(throws: StoreError.self) { try await world.store.follow(PostID(deleted.id)) }
        #expect(try await world.store.followedPosts().isEmpty)
    }

    @Test("a post of one's own is followed automatically unless asked not to")
    func autoFollow() async throws {
        let temporary = try TemporaryStore()
        let identity = NodeIdentity.generate()
        let photo = PhotoReference(
            sha256: AssetHash.of(Data("x".utf8)),
            byteCount: 1,
            mediaType: .png,
            width: 1,
            height: 1
        )
        let followed = try await temporary.store.append(
            .post(caption: "auto", photo: photo, location: nil),
            by: identity,
            autoFollow: true
        )
        _ = try await temporary.store.append(.post(caption: "not followed", photo: photo, location: nil), by: identity)
        #expect(try await temporary.store.followedPosts() == [PostID(followed.id)])
    }

    @Test("marking read: by number, all, and an unknown number is an error that marks nothing")
    func markRead() async throws {
        var world = try World()
        let post = try await world.followedPost()
        let comments = (0..<3).map { world.factory.make(.comment(post: post, text: "c\($0)"), by: 2) }
        _ = try await world.store.ingest(comments, notifying: world.policy)
        let ids = try await world.store.notifications().map(\.id)
        #expect(ids.count == 3)
        await #expect(throws: StoreError.self) { try await world.store.markNotificationsRead([ids[0], 9999]) }
        #expect(try await world.store.unreadNotificationCount() == 3, "nothing was marked")
        #expect(try await world.store.markNotificationsRead([ids[0], ids[0]]) == 1)
        #expect(try await world.store.markNotificationsRead([ids[0]]) == 0, "already read")
        #expect(try await world.store.notifications(unreadOnly: true).map(\.id) == Array(ids.dropFirst()))
        #expect(try await world.store.markAllNotificationsRead() == 2)
        #expect(try await world.store.unreadNotificationCount() == 0)
        #expect(try await world.store.following().first?.unread == 0)
    }
}
