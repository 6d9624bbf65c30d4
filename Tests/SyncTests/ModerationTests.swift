import ContinuumCore
import ContinuumStore
import Foundation
import Testing

/// Moderation across three real nodes of one group: a post's author hides a comment on it (every node honours it),
/// and a node blocks an author (locally).
@Suite("Moderation: hide and block", .serialized)
struct ModerationTests {
    @Test("a post's author hides a comment: its text is erased on all three nodes; others cannot hide it")
    func hideComment() async throws {
        let (alice, bob, carol) = try await Self.group()
        defer { for node in [alice, bob, carol] { node.remove() } }
        let post = try await alice.cli("post", alice.fixture("lake.png"), "--caption", "a quiet lake")
        try await Self.converge([alice, bob, carol], on: post)
        let spam = try await bob.cli("comment", post, "buy cheap watches")
        let kind = try await carol.cli("comment", post, "lovely light")
        for node in [alice, bob, carol] {
            try await eventually("\(node.name) has both comments") {
                try await Self.comments(node, post).count == 2
            }
        }
        let spamID = try #require(CommentID(hex: spam))
        let spammer = try #require(
            try await alice.withStore {
                try await $0.post(PostID(hex: post)!)?.comments.first { $0.id == spamID }?.author
            }
        )
        // Only the post's author may hide: carol's attempt is refused, and changes nothing.
        let refused = try await carol.tryCLI("hide", spam)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("only the author of the post can hide a comment on it"), "\(refused.stderr)")
        let notComment = try await alice.tryCLI("hide", post)
        #expect(notComment.stderr.contains("is a post; hide is for comments on your posts"), "\(notComment.stderr)")

        #expect(try await alice.cli("hide", spam).hasPrefix("hid comment"))
        for node in [alice, bob, carol] {
            try await eventually("\(node.name) no longer shows the hidden comment") {
                try await Self.comments(node, post) == ["lovely light"]
            }
            // Its text is gone from the store, not only from the view: the record is kept as its header alone.
            let held = try await node.withStore {
                try await $0.storedRecords(of: spammer, in: 1...1000, limit: 1000, maxBytes: 1 << 20)
            }
            let record = try #require(held.first { $0.id == spamID.record }, "\(node.name) holds the record")
            #expect(
                Data(record.bytes).range(of: Data("buy cheap watches".utf8)) == nil,
                "\(node.name) keeps no text of the hidden comment"
            )
        }
        #expect(try await Self.comments(carol, post) == ["lovely light"], "\(kind) stays")
        try await Self.stop([alice, bob, carol])
    }

    @Test("block: the author's posts, photos and notifications go from this node only; new ones are not shown")
    func block() async throws {
        let (alice, bob, carol) = try await Self.group()
        defer { for node in [alice, bob, carol] { node.remove() } }
        let bobPost = try await bob.cli("post", bob.fixture("forest.webp"), "--caption", "bob's forest")
        let alicePost = try await alice.cli("post", alice.fixture("lake.png"), "--caption", "alice's lake")
        try await Self.converge([alice, bob, carol], on: bobPost)
        try await Self.converge([alice, bob, carol], on: alicePost)
        try await carol.cli("follow", alicePost)
        try await eventually("carol has bob's photo") {
            try await carol.withStore { try await $0.post(PostID(hex: bobPost)!)?.post.photo.available } == true
        }
        let photo = try #require(
            try await carol.withStore { try await $0.post(PostID(hex: bobPost)!)?.post.photo.sha256 }
        )

        let blocked = try await carol.cli("block", "bob")
        #expect(blocked.contains("erased 1 post and 0 comments"), "\(blocked)")
        #expect(try await carol.cli("blocked").contains("bob"))
        #expect(!(try await carol.feedJSON()).contains("bob's forest"))
        #expect(
            !GroupTests.files(in: carol.data.appendingPathComponent("photos")).contains { $0.contains(photo.hex) },
            "bob's photo file is gone from carol's node"
        )
        // Bob writes more: alice shows it, carol does not, and carol is not notified of his comment.
        let later = try await bob.cli("post", bob.fixture("lake.png"), "--caption", "bob again")
        try await bob.cli("comment", alicePost, "bob comments on alice's lake")
        try await eventually("alice has bob's new post and comment") {
            let comments = try await Self.comments(alice, alicePost)
            return try await alice.feedJSON().contains("bob again") && comments.count == 1
        }
        try await eventually("carol holds bob's new records (as headers)") {
            try await carol.clock() == (try await alice.clock())
        }
        #expect(!(try await carol.feedJSON()).contains("bob again"))
        #expect(try await Self.comments(carol, alicePost).isEmpty)
        #expect(
            !(try await carol.cli("notifications")).contains("bob comments"),
            "no notification from a blocked author"
        )
        #expect(try await bob.feedJSON().contains("bob's forest"), "blocking is local: bob keeps his posts")
        #expect(try await alice.feedJSON().contains("bob's forest"), "and alice keeps them")

        // Bad input: a clear error, nothing changes.
        let unknown = try await carol.tryCLI("block", "nobody-here")
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("no author is called 'nobody-here'"), "\(unknown.stderr)")
        let me = try await carol.tryCLI("block", "carol")
        #expect(me.stderr.contains("a node does not block itself"), "\(me.stderr)")

        // Unblocked: what bob writes from now on shows again.
        #expect(try await carol.cli("unblock", "bob").hasPrefix("unblocked bob"))
        #expect(try await carol.cli("blocked") == "this node blocks nobody")
        let after = try await bob.cli("post", bob.fixture("forest.webp"), "--caption", "bob after the unblock")
        try await eventually("carol shows bob's post made after the unblock") {
            try await carol.feedJSON().contains(after)
        }
        #expect(!(try await carol.feedJSON()).contains(later), "what was erased while blocked stays erased")
        try await Self.stop([alice, bob, carol])
    }

    // MARK: Helpers

    /// Three running nodes in one group that alice founded, bob and carol joined by invite.
    static func group() async throws -> (TestNode, TestNode, TestNode) {
        let alice = try await TestNode("alice", network: false)
        let bob = try await TestNode("bob", network: false)
        let carol = try await TestNode("carol", network: false)
        try await alice.cli("group", "create", "Friends")
        try await alice.start()
        try await bob.start()
        try await carol.start(peers: [bob])
        for joiner in [bob, carol] {
            try await joiner.cli(
                "join",
                try await alice.cli("invite", "--host", "127.0.0.1", "--port", "\(alice.port)")
            )
        }
        return (alice, bob, carol)
    }

    static func converge(_ nodes: [TestNode], on post: String) async throws {
        for node in nodes {
            try await eventually("\(node.name) has post \(post.prefix(8))") { try await node.feedJSON().contains(post) }
        }
    }

    /// The texts of a post's comments as a node shows them.
    static func comments(_ node: TestNode, _ post: String) async throws -> [String] {
        try await node.withStore { try await $0.post(PostID(hex: post)!)?.comments.map(\.text) ?? [] }
    }

    static func stop(_ nodes: [TestNode]) async throws {
        for node in nodes.reversed() { try await node.stop() }
    }
}
