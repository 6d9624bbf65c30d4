import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// The thumbnails a photo's live posts commit to (PROTOCOL.md §2.5): what a receiver checks a peer's thumbnail
/// against (§7.4.19).
@Suite struct ThumbnailCommitmentTests {
    static func photo(_ seed: String, thumbnail: String?) -> PhotoReference {
        var photo = TestPhoto.reference(seed)
        photo.thumbnail = thumbnail.map {
            ThumbnailReference(sha256: AssetHash.of(Data($0.utf8)), byteCount: UInt32($0.utf8.count))
        }
        return photo
    }

    @Test("a post's commitment, its edit's new photo's in either order, none for a record without, none once deleted")
    func commitmentsFollowTheShownPhoto() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 11)
        let first = Self.photo("first", thumbnail: "first thumbnail")
        let second = Self.photo("second", thumbnail: "second thumbnail")
        let bare = Self.photo("bare", thumbnail: nil)
        let post = factory.make(.post(caption: "lake", photo: first, location: nil), by: 0)
        let edit = factory.make(.edit(post: PostID(post.id), change: PostChange(photo: second)), by: 0)
        let other = factory.make(.post(caption: "bare", photo: bare, location: nil), by: 1)
        let delete = factory.make(.delete(targets: [post.id]), by: 0)
        let hash = { (text: String) in AssetHash.of(Data(text.utf8)) }
        for order in [[post, edit, other], [edit, other, post]] {
            let temporary = try TemporaryStore()
            let store = temporary.store
            _ = try await store.ingest(Array(order.prefix(1)))
            if order.first == post {
                // The post alone: its photo's thumbnail.
                #expect(try await store.committedThumbnails(of: first.sha256) == [hash("first thumbnail")])
            }
            _ = try await store.ingest(Array(order.dropFirst()))
            // The edit put in another photo: the post commits to that photo's thumbnail, and the first photo's
            // commitment went with it.
            #expect(try await store.committedThumbnails(of: second.sha256) == [hash("second thumbnail")])
            #expect(try await store.committedThumbnails(of: first.sha256).isEmpty)
            // A post that commits to no thumbnail.
            #expect(try await store.committedThumbnails(of: bare.sha256).isEmpty)
            // The photos to fetch say which posts sign a thumbnail: the fetcher asks for it rather than make one.
            let missing = Dictionary(
                uniqueKeysWithValues: try await store.missingPhotos().map { ($0.hash, $0.signsThumbnail) }
            )
            #expect(missing == [second.sha256: true, bare.sha256: false])
            _ = try await store.ingest([delete])
            #expect(try await store.committedThumbnails(of: second.sha256).isEmpty)
        }
    }

    @Test("a record's thumbnail survives encoding: the stored record decodes with it")
    func recordKeepsItsThumbnail() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 12)
        let photo = Self.photo("kept", thumbnail: "kept thumbnail")
        let post = factory.make(.post(caption: "kept", photo: photo, location: nil), by: 0)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([post])
        let bytes = try #require(try await temporary.store.allRecordBytes().first { $0 == post.bytes })
        let decoded = try SignedRecord(bytes: bytes)
        guard case .post(_, let stored, _) = decoded.body else {
            Issue.record("the stored record is not a post: \(String(describing: decoded.body))")
            return
        }
        #expect(
            stored.thumbnail == ThumbnailReference(sha256: AssetHash.of(Data("kept thumbnail".utf8)), byteCount: 14)
        )
    }
}
