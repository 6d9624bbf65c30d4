import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Groups in the store where a record's word cannot be taken: a self-add may name any node, and a joiner already
/// in a group joins it no second time.
@Suite("Groups in the store: blocking, joins")
struct GroupStoreTests {
    /// Signs `body` as record `sequence` of `identity`'s log.
    static func sign(
        _ body: RecordBody,
        by identity: NodeIdentity,
        sequence: UInt64,
        after previous: RecordID?
    ) throws -> VerifiedRecord {
        try identity.sign(
            RecordContent(
                author: identity.author,
                sequence: sequence,
                previous: previous,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000 + Int64(sequence)),
                body: body
            )
        )
    }

    static func photo(_ seed: Int) -> PhotoReference {
        TestPhoto.reference("group-store-photo-\(seed)")
    }

    @Test("blocking a log whose self-add names this node blocks that log alone, never this node's own logs")
    func blockDoesNotFollowAForgedNode() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let me = NodeIdentity.generate()
        let group = try await store.createGroup(name: "Party", open: true, by: me)
        let mine = try await store.append(
            .post(caption: "my own post", photo: Self.photo(1), location: nil),
            by: try await store.logIdentity(in: group, of: me)
        )
        // Mallory adds herself to the open group, naming this node's id as hers, and posts.
        let mallory = NodeIdentity.generate()
        let selfAdd = try Self.sign(
            .member(MemberChange(group: group, action: .add, node: me.node, log: mallory.author)),
            by: mallory,
            sequence: 1,
            after: nil
        )
        let spam = try Self.sign(
            .post(caption: "spam", photo: Self.photo(2), location: nil),
            by: mallory,
            sequence: 2,
            after: selfAdd.id
        )
        _ = try await store.ingest([selfAdd])
        _ = try await store.ingest([spam])
        #expect(try await store.feed(FeedQuery()).posts.count == 2)

        let erased = try await store.block(mallory.author, by: me)
        #expect(erased.posts == 1, "Mallory's post, and not this node's")
        let feed = try await store.feed(FeedQuery()).posts.map(\.id)
        #expect(feed == [PostID(mine.id)])
        // This node's next post shows: its own logs are not blocked.
        let next = try await store.append(
            .post(caption: "after the block", photo: Self.photo(3), location: nil),
            by: try await store.logIdentity(in: group, of: me)
        )
        #expect(try await store.post(PostID(next.id))?.post.caption == "after the block")
        #expect(try await store.blockedAuthors().map(\.node) == [nil], "the self-add's node is not taken")
    }

    @Test("a join into a group this node is in already is refused, and changes nothing")
    func noSecondJoin() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let me = NodeIdentity.generate()
        let group = try await store.createGroup(name: "Family", open: false, by: me)
        let before = try await store.groups()
        let log = try await store.beginJoin(by: me, for: Data("an invite".utf8))
        await #expect(throws: StoreError.self) { try await store.completeJoin(log: log, group: group, by: me) }
        #expect(try await store.groups() == before)
        #expect(try await store.logIdentity(in: group, of: me).author != log, "the group's log is the one it had")
    }
}
