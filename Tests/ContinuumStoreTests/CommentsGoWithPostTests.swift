import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("A post's delete erases every comment on it, whoever wrote it, in any order (PROTOCOL.md §2.6)")
struct CommentsGoWithPostTests {
    /// A post by author 0, comments on it by authors 1 and 2, the post's delete, and a comment by 1 on another post
    /// of author 0 that stays.
    struct Scene {
        var factory = RecordFactory(authorCount: 3, seed: 21)
        let post: VerifiedRecord
        let first: VerifiedRecord
        let second: VerifiedRecord
        let delete: VerifiedRecord
        let elsewhere: VerifiedRecord
        let other: VerifiedRecord

        init() {
            post = factory.post(by: 0)
            other = factory.post(by: 0)
            first = factory.make(.comment(post: PostID(post.id), text: "tulips by the window"), by: 1)
            second = factory.make(.comment(post: PostID(post.id), text: "walnut cake recipe"), by: 2)
            elsewhere = factory.make(.comment(post: PostID(other.id), text: "a comment that stays"), by: 1)
            delete = factory.make(.delete(targets: [post.id]), by: 0)
        }
    }

    /// Every order of the given records.
    static func permutations<T>(_ items: [T]) -> [[T]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index in
            var rest = items
            let first = rest.remove(at: index)
            return permutations(rest).map { [first] + $0 }
        }
    }

    /// Expects the scene's comments on the deleted post erased from every record and row, and the other kept.
    static func expectErased(_ store: ContinuumStore, _ scene: Scene, _ order: String) async throws {
        let bytes = Data(try await store.allRecordBytes().joined())
        #expect(bytes.range(of: Data("tulips by the window".utf8)) == nil, "order \(order)")
        #expect(bytes.range(of: Data("walnut cake recipe".utf8)) == nil, "order \(order)")
        #expect(bytes.range(of: Data("a comment that stays".utf8)) != nil, "order \(order)")
        #expect(try await store.post(PostID(scene.post.id)) == nil, "order \(order)")
        #expect(try await store.post(PostID(scene.other.id))?.comments.map(\.text) == ["a comment that stays"])
        #expect(try await store.counts().comments == 1, "order \(order)")
        // Every record is held: the logs stay whole, and the clocks equal on every node.
        let clock = try await store.clock()
        let authors = scene.factory.authors.map(\.author)
        #expect([clock[authors[0]], clock[authors[1]], clock[authors[2]]] == [3, 2, 1], "order \(order)")
    }

    @Test("the post, two comments by others and the delete, in all 24 orders: no comment text is left")
    func everyOrder() async throws {
        let scene = Scene()
        let names = [
            scene.post.id: "post", scene.first.id: "first", scene.second.id: "second", scene.delete.id: "delete",
        ]
        let orders = Self.permutations([scene.post, scene.first, scene.second, scene.delete])
        #expect(orders.count == 24)
        for order in orders {
            let temporary = try TemporaryStore()
            _ = try await temporary.store.ingest([scene.other, scene.elsewhere])
            for record in order { _ = try await temporary.store.ingest([record]) }
            try await Self.expectErased(temporary.store, scene, order.map { names[$0.id]! }.joined(separator: ","))
        }
    }

    @Test("the deleted post held as its header alone, its content withheld: its comments go all the same")
    func postHeldAsHeaderAlone() async throws {
        let scene = Scene()
        for delete in [true, false] {
            let temporary = try TemporaryStore()
            _ = try await temporary.store.ingest([scene.other, scene.elsewhere])
            _ = try await temporary.store.ingest([scene.post.erased(), scene.first])
            if delete { _ = try await temporary.store.ingest([scene.delete, scene.second]) }
            let bytes = Data(try await temporary.store.allRecordBytes().joined())
            #expect((bytes.range(of: Data("tulips by the window".utf8)) == nil) == delete)
            if delete { try await Self.expectErased(temporary.store, scene, "header alone") }
        }
    }

    @Test("in one batch, and a comment's copy with its text arriving after the delete, keep nothing")
    func oneBatchThenACopy() async throws {
        let scene = Scene()
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([scene.other, scene.elsewhere])
        _ = try await temporary.store.ingest([scene.first.erased(), scene.post, scene.delete, scene.second])
        // A node built before this rule still holds the text, and sends the comment whole: the text is dropped.
        let report = try await temporary.store.ingest([scene.first])
        #expect(report.stored.isEmpty)
        try await Self.expectErased(temporary.store, scene, "one batch, then a copy")
    }

    @Test("a delete of the post signed by another author than the post's erases no comment")
    func forgedDelete() async throws {
        var scene = Scene()
        let forged = scene.factory.make(.delete(targets: [scene.post.id]), by: 1)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([scene.post, scene.first, scene.second, forged])
        let shown = try await temporary.store.post(PostID(scene.post.id))
        #expect(shown?.comments.map(\.text).sorted() == ["tulips by the window", "walnut cake recipe"])
        #expect(shown?.post.commentCount == 2)
    }
}
