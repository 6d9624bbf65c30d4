import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Follow states shared between the devices of one account (PROTOCOL.md §7.8.21): per post, the later change wins.
@Suite("Follow states: what a device follows, taken by another device of the account")
struct FollowStateTests {
    let author = try! NodeIdentity(seed: [UInt8](repeating: 51, count: 32))

    /// A store holding `count` posts of one author (in no group: a node's private log), their ids.
    func posts(_ count: Int, in temporary: TemporaryStore) async throws -> [PostID] {
        var ids: [PostID] = []
        for index in 0..<count {
            let photo = TestPhoto.reference("follow-state-\(index)")
            let record = try await temporary.store.append(
                .post(caption: "post \(index)", photo: photo, location: nil),
                by: author
            )
            ids.append(PostID(record.id))
        }
        return ids
    }

    @Test("a later follow or unfollow wins; an earlier one changes nothing; a tie follows")
    func laterWins() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let ids = try await posts(3, in: temporary)
        try await store.follow(ids[0])
        let mine = try #require(try await store.followStates(limit: 10).first { $0.post == ids[0] })
        #expect(mine.following)
        let later = Timestamp(milliseconds: mine.changedAt.milliseconds + 5)
        let earlier = Timestamp(milliseconds: mine.changedAt.milliseconds - 5)
        // Another device unfollowed ids[0] before this one followed it: no change. It followed ids[1]; ids[2] it
        // unfollowed without this node holding any state of it.
        #expect(
            try await store.mergeFollows([
                FollowState(post: ids[0], following: false, changedAt: earlier),
                FollowState(post: ids[1], following: true, changedAt: earlier),
                FollowState(post: ids[2], following: false, changedAt: earlier),
            ]) == 1
        )
        #expect(try await store.followedPosts() == [ids[0], ids[1]])
        // Then it unfollowed ids[0], after this node followed it: taken.
        #expect(try await store.mergeFollows([FollowState(post: ids[0], following: false, changedAt: later)]) == 1)
        #expect(try await store.followedPosts() == [ids[1]])
        // The same state again changes nothing; a tie with an unfollow follows.
        #expect(try await store.mergeFollows([FollowState(post: ids[0], following: false, changedAt: later)]) == 0)
        #expect(try await store.mergeFollows([FollowState(post: ids[0], following: true, changedAt: later)]) == 1)
        #expect(try await store.followedPosts() == [ids[0], ids[1]])
        // This node's own unfollow is dated after what it holds, even from a device whose clock is ahead.
        let ahead = Timestamp(milliseconds: 1_900_000_000_000)
        #expect(try await store.mergeFollows([FollowState(post: ids[2], following: true, changedAt: ahead)]) == 1)
        try await store.unfollow(ids[2])
        let unfollowed = try #require(try await store.followStates(limit: 10).first { $0.post == ids[2] })
        #expect(!unfollowed.following && unfollowed.changedAt.milliseconds == ahead.milliseconds + 1)
    }

    @Test("a followed post that is not here, or deleted, is not followed; its state is kept")
    func absentPost() async throws {
        let temporary = try TemporaryStore()
        let stranger = PostID(unchecked: Data(repeating: 0x77, count: 32))
        #expect(
            try await temporary.store.mergeFollows([
                FollowState(post: stranger, following: true, changedAt: Timestamp(milliseconds: 10))
            ]) == 0
        )
        #expect(try await temporary.store.followedPosts().isEmpty)
        #expect(try await temporary.store.followStates(limit: 10).map(\.post) == [stranger])
    }
}
