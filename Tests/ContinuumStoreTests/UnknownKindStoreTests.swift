import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("The store and records of kinds it does not know (PROTOCOL.md §2.8): kept, counted, shown nowhere, erasable")
struct UnknownKindStoreTests {
    /// A post by author 0, a record of kind 200 by author 1 that goes with it, one of kind 201 by author 1 that goes
    /// with no post, and the post's delete.
    struct Scene {
        var factory = RecordFactory(authorCount: 2, seed: 31)
        let post: VerifiedRecord
        let withPost: VerifiedRecord
        let alone: VerifiedRecord
        let delete: VerifiedRecord

        init() {
            post = factory.post(by: 0)
            withPost = factory.make(
                .opaque(
                    OpaqueReferences(code: 200, context: PostID(post.id), data: [7]),
                    payload: Array("goes with the post".utf8)
                ),
                by: 1
            )
            alone = factory.make(
                .opaque(OpaqueReferences(code: 201, context: nil), payload: Array("goes with nothing".utf8)),
                by: 1
            )
            delete = factory.make(.delete(targets: [post.id]), by: 0)
        }
    }

    static func holds(_ store: ContinuumStore, _ text: String) async throws -> Bool {
        Data(try await store.allRecordBytes().joined()).range(of: Data(text.utf8)) != nil
    }

    @Test("kept whole, counted in the clock and sent on; the feed, the post and the counts do not change")
    func keptAndShownNowhere() async throws {
        let scene = Scene()
        let temporary = try TemporaryStore()
        let report = try await temporary.store.ingest([scene.post, scene.withPost, scene.alone])
        #expect(report.stored.count == 3 && report.ignored.isEmpty)
        let held = try await temporary.store.allRecordBytes()
        #expect(held.contains(scene.withPost.bytes) && held.contains(scene.alone.bytes), "kept whole, as received")
        #expect(try await temporary.store.clock()[scene.factory.authors[1].author] == 2)
        #expect(try await temporary.store.feed(FeedQuery()).posts.map(\.id) == [PostID(scene.post.id)])
        let shown = try await temporary.store.post(PostID(scene.post.id))
        #expect(shown?.comments.isEmpty == true && shown?.post.commentCount == 0)
        let counts = try await temporary.store.counts()
        #expect(counts.posts == 1 && counts.comments == 0)
    }

    @Test("the post's delete by its author erases what goes with it, in all six orders; the other stays")
    func erasedWithItsPost() async throws {
        let scene = Scene()
        let orders = [
            [scene.post, scene.withPost, scene.delete], [scene.post, scene.delete, scene.withPost],
            [scene.withPost, scene.post, scene.delete], [scene.withPost, scene.delete, scene.post],
            [scene.delete, scene.post, scene.withPost], [scene.delete, scene.withPost, scene.post],
        ]
        for (index, order) in orders.enumerated() {
            let temporary = try TemporaryStore()
            _ = try await temporary.store.ingest([scene.alone])
            for record in order { _ = try await temporary.store.ingest([record]) }
            #expect(try await !Self.holds(temporary.store, "goes with the post"), "order \(index)")
            #expect(try await Self.holds(temporary.store, "goes with nothing"), "order \(index)")
            // The header stays: the log is whole.
            let held = try await temporary.store.allRecordBytes()
            #expect(held.contains(scene.withPost.record.headerBytes), "order \(index)")
            // A copy with its content, sent again by a node that still has it, is dropped.
            _ = try await temporary.store.ingest([scene.withPost])
            #expect(try await !Self.holds(temporary.store, "goes with the post"), "order \(index)")
        }
    }

    @Test("blocking their author erases them, and keeps the later ones as headers alone")
    func blockedAuthor() async throws {
        var scene = Scene()
        let later = scene.factory.make(
            .opaque(OpaqueReferences(code: 202, context: nil), payload: Array("written after the block".utf8)),
            by: 1
        )
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([scene.post, scene.withPost, scene.alone])
        _ = try await temporary.store.block(scene.factory.authors[1].author, by: NodeIdentity.generate())
        _ = try await temporary.store.ingest([later])
        for text in ["goes with the post", "goes with nothing", "written after the block"] {
            #expect(try await !Self.holds(temporary.store, text), "\(text)")
        }
        #expect(try await temporary.store.clock()[scene.factory.authors[1].author] == 3, "the log stays whole")
    }

    @Test("a delete by its own author erases it; a delete of it by someone else does not")
    func deletedByItsAuthor() async throws {
        var scene = Scene()
        let forged = scene.factory.make(.delete(targets: [scene.alone.id]), by: 0)
        let own = scene.factory.make(.delete(targets: [scene.alone.id]), by: 1)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([scene.post, scene.withPost, scene.alone, forged])
        #expect(try await Self.holds(temporary.store, "goes with nothing"))
        _ = try await temporary.store.ingest([own])
        #expect(try await !Self.holds(temporary.store, "goes with nothing"))
        #expect(try await Self.holds(temporary.store, "goes with the post"))
    }
}
